import { validSamples } from './test/helpers/external-accounts.js';
import { checkAccount, createRequestValidator } from './src/modules/external-accounts/validation.js';
import { CustomerCreateEnvelope } from './src/modules/external-accounts/schemas.js';
import { toFieldErrors } from './src/platform/http/validation.js';
const v = createRequestValidator(CustomerCreateEnvelope);
for (const [type, sample] of Object.entries(validSamples(new Date()))) {
  const ok = v(sample);
  const errs = ok ? [] : toFieldErrors(v.errors!);
  try { const c = checkAccount(sample, errs, { scope: 'mainnet', now: new Date() }); console.log(type, 'OK', c.rails.join(',')); }
  catch (e) { console.log(type, 'FAIL', (e as any).code, JSON.stringify((e as any).details)); }
}
