import type { UmaConfig } from '../../config.js';
import type { Resolver } from '../../platform/address-guard.js';
import { vaspRequest, type VaspResponse } from './http-client.js';

/** One message to another VASP, as the protocol code writes it. */
export interface VaspExchange {
  url: URL;
  method: 'GET' | 'POST';
  body?: string;
}

/** Sends one message and reads the answer; never throws (an unreachable VASP is `{ok: false}`). */
export type VaspSend = (exchange: VaspExchange) => Promise<VaspResponse>;

/** The platform a message is sent for: its environment decides where the message may go. */
export interface VaspCaller {
  platformId: string;
  environment: 'sandbox' | 'production';
}

/** A counterparty VASP that answers inside this process instead of over the network. */
export interface InProcessVasp {
  serves(domain: string): boolean;
  answer(caller: VaspCaller, exchange: VaspExchange): Promise<VaspResponse>;
}

/** Over the network, with the production guard (no loopback, private or metadata addresses) for production platforms. */
export function httpSend(config: UmaConfig, resolver: Resolver, environment: 'sandbox' | 'production'): VaspSend {
  return (exchange) => vaspRequest({ ...exchange, timeoutMs: config.timeoutMs, guard: environment === 'production', resolver });
}

/**
 * The seam through which the sending side talks to other VASPs. Every message goes over HTTP,
 * except a sandbox platform's messages to a domain an in-process VASP serves (the simulated
 * test counterparties): production platforms always reach the real domain.
 */
export class VaspTransport {
  constructor(
    private readonly config: UmaConfig,
    private readonly resolver: Resolver,
    private readonly inProcess: InProcessVasp[] = [],
  ) {}

  for(caller: VaspCaller): VaspSend {
    const network = httpSend(this.config, this.resolver, caller.environment);
    if (caller.environment !== 'sandbox') return network;
    return (exchange) => {
      const vasp = this.inProcess.find((candidate) => candidate.serves(exchange.url.host.toLowerCase()));
      return vasp ? vasp.answer(caller, exchange) : network(exchange);
    };
  }
}
