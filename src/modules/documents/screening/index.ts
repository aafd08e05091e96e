import type { Config } from '../../../config.js';
import { BuiltInScreener } from './builtin.js';
import { HttpScreener } from './http.js';
import { SandboxScreener } from './sandbox.js';
import type { DocumentScreener } from './screener.js';

/**
 * Which screener judges a platform's uploads. Sandbox platforms: file-name triggers, else the
 * built-in screener's decoding alone (a file that is what it says passes). Production platforms: the external provider when one is configured
 * (`CORRIDOR_SCREENING_URL`), else the built-in screener.
 */
export class ScreeningProviders {
  private readonly sandbox: DocumentScreener;
  private readonly production: DocumentScreener;

  constructor(
    config: Pick<Config, 'screening'>,
    private readonly builtIn: BuiltInScreener = new BuiltInScreener(),
  ) {
    this.sandbox = new SandboxScreener(builtIn);
    this.production = config.screening.url
      ? new HttpScreener({ url: config.screening.url, timeoutMs: config.screening.timeoutMs, ...(config.screening.token ? { token: config.screening.token } : {}) })
      : builtIn;
  }

  for(environment: 'sandbox' | 'production'): DocumentScreener {
    return environment === 'sandbox' ? this.sandbox : this.production;
  }

  /** Ends the built-in screener's parsing workers. */
  close(): Promise<void> {
    return this.builtIn.close();
  }
}
