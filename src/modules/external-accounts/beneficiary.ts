import anyAscii from 'any-ascii';
import type { HttpProviderConfig } from '../../config.js';
import { AppError } from '../../platform/errors.js';
import { postToProvider } from '../../platform/provider-http.js';
import { matchNames, normaliseName } from './name-match.js';
import { accountSuffix, primaryIdentifier } from './sandbox-suffix.js';
import type { AccountInfo, BeneficiaryVerificationStatus } from './schemas.js';

/** What the receiving institution is asked about: the account, and the holder the platform named. */
export interface BeneficiaryQuery {
  accountType: string;
  currency: string;
  /** The account's identifying fields (accountInfo without the beneficiary). */
  account: Record<string, unknown>;
  beneficiaryType: 'INDIVIDUAL' | 'BUSINESS';
  name: string;
}

/**
 * The receiving institution's side of beneficiary verification: the holder name it has on
 * record for the account, or null when it does not confirm names. Corridor compares the names
 * itself (`name-match.ts`), so every institution is judged by one documented rule.
 */
export interface InstitutionDirectory {
  holderName(query: BeneficiaryQuery): Promise<string | null>;
}

export interface BeneficiaryVerification {
  status: BeneficiaryVerificationStatus;
  /** The name on record, returned only on a match or a close match (a mismatch reveals nothing). */
  verifiedName?: string;
}

/** Words in a sandbox holder name that force an outcome (docs/external-accounts.md). */
export const SANDBOX_TRIGGERS = { notMatched: 'nomatch', partial: 'partial', unsupported: 'unsupported' } as const;
/** The upstream sandbox's account suffixes (sandbox-suffix.ts) for the outcomes of the name on record. */
const SANDBOX_NAME_SUFFIXES: Record<string, keyof typeof SANDBOX_TRIGGERS> = { '102': 'notMatched', '103': 'partial', '106': 'unsupported' };
/** The upstream sandbox's account suffixes for outcomes without a name comparison: 105 is an account the institution refuses. */
const SANDBOX_STATUS_SUFFIXES: Record<string, 'PENDING' | 'CHECKED_BY_RECEIVING_FI' | 'INVALID'> = { '104': 'PENDING', '105': 'INVALID', '107': 'CHECKED_BY_RECEIVING_FI' };

/** The upstream sandbox's test digits at the end of the account's primary identifier, if any. */
function suffixOf(query: BeneficiaryQuery): string | undefined {
  const identifier = primaryIdentifier(query.account);
  return identifier === undefined ? undefined : accountSuffix(identifier);
}
const SANDBOX_OTHER_HOLDER = 'JORDAN RIVERA';
const SANDBOX_EXTRA_SURNAME = 'JONES';

/**
 * The simulated receiving institution of sandbox platforms. It keeps names as banks do: ASCII
 * capitals, an individual's family name first ("Jürgen Müller" → "MULLER JURGEN"), so the
 * matching rule really runs (transliteration, token order) and answers MATCHED. A name with the
 * word `nomatch` is on record as someone else's (NOT_MATCHED), with `partial` carries an extra
 * surname (PARTIAL_MATCH), with `unsupported` the institution does not confirm names. An account
 * identifier ending in 102, 103 or 106 (the upstream sandbox's values) does the same.
 */
export class SimulatedInstitution implements InstitutionDirectory {
  async holderName(query: BeneficiaryQuery): Promise<string | null> {
    const words = normaliseName(query.name, query.beneficiaryType).split(' ');
    const bySuffix = SANDBOX_NAME_SUFFIXES[suffixOf(query) ?? ''];
    if (bySuffix) words.push(SANDBOX_TRIGGERS[bySuffix]);
    if (words.includes(SANDBOX_TRIGGERS.unsupported)) return null;
    if (words.includes(SANDBOX_TRIGGERS.notMatched)) return SANDBOX_OTHER_HOLDER;
    const ascii = anyAscii(query.name).toUpperCase().replace(/\s+/g, ' ').trim();
    const parts = ascii.split(' ');
    const bankStyle = query.beneficiaryType === 'INDIVIDUAL' && parts.length > 1 ? [parts.at(-1)!, ...parts.slice(0, -1)].join(' ') : ascii;
    return words.includes(SANDBOX_TRIGGERS.partial) ? `${bankStyle} ${SANDBOX_EXTRA_SURNAME}` : bankStyle;
  }
}

const MAX_NAME_LENGTH = 255;

function unavailable(reason: string): AppError {
  return new AppError('SERVICE_UNAVAILABLE', `The beneficiary verification provider did not answer (${reason}); no account was created. Retry later.`);
}

/**
 * A name-check provider over HTTP (contract in docs/external-accounts.md): one POST per new
 * account, answered `{"holderName": "…"}` or `{"holderName": null}`. Failure or an answer
 * outside the contract is 503 and creates nothing.
 */
export class HttpInstitutionDirectory implements InstitutionDirectory {
  constructor(private readonly options: HttpProviderConfig & { url: string }) {}

  async holderName(query: BeneficiaryQuery): Promise<string | null> {
    const response = await postToProvider(this.options, JSON.stringify(query), unavailable);
    let answer: unknown;
    try {
      answer = await response.json();
    } catch {
      throw unavailable('the answer is not JSON');
    }
    const holderName = (answer as { holderName?: unknown } | null)?.holderName;
    if (holderName === null) return null;
    if (typeof holderName !== 'string' || holderName.length === 0 || holderName.length > MAX_NAME_LENGTH) throw unavailable('the answer does not follow the contract');
    return holderName;
  }
}

/** Production platforms without a configured provider: no institution confirms names. */
const NO_DIRECTORY: InstitutionDirectory = { holderName: async () => null };

/** Which institution answers for a platform: sandbox → simulated; production → the HTTP provider when configured. */
export class BeneficiaryVerifier {
  private readonly sandbox: InstitutionDirectory;
  private readonly production: InstitutionDirectory;

  constructor(config: HttpProviderConfig, overrides: { sandbox?: InstitutionDirectory; production?: InstitutionDirectory } = {}) {
    this.sandbox = overrides.sandbox ?? new SimulatedInstitution();
    this.production = overrides.production ?? (config.url ? new HttpInstitutionDirectory({ ...config, url: config.url }) : NO_DIRECTORY);
  }

  async verify(environment: 'sandbox' | 'production', query: BeneficiaryQuery): Promise<BeneficiaryVerification> {
    const bySuffix = environment === 'sandbox' ? SANDBOX_STATUS_SUFFIXES[suffixOf(query) ?? ''] : undefined;
    if (bySuffix === 'INVALID') {
      throw new AppError('INVALID_BANK_ACCOUNT', 'The receiving institution does not recognise this account (sandbox: an identifier ending in 105).');
    }
    if (bySuffix) return { status: bySuffix };
    const holderName = await (environment === 'sandbox' ? this.sandbox : this.production).holderName(query);
    if (holderName === null) return { status: 'UNSUPPORTED' };
    const status = matchNames(query.name, holderName, query.beneficiaryType);
    return status === 'NOT_MATCHED' ? { status } : { status, verifiedName: holderName };
  }
}

/** The name to check and its holder type, for accounts that carry a beneficiary. */
export function beneficiaryOf(info: AccountInfo): { beneficiaryType: 'INDIVIDUAL' | 'BUSINESS'; name: string } | undefined {
  const beneficiary = info.beneficiary as { beneficiaryType?: string; fullName?: string; legalName?: string } | undefined;
  if (beneficiary?.beneficiaryType === 'INDIVIDUAL' && beneficiary.fullName) return { beneficiaryType: 'INDIVIDUAL', name: beneficiary.fullName };
  if (beneficiary?.beneficiaryType === 'BUSINESS' && beneficiary.legalName) return { beneficiaryType: 'BUSINESS', name: beneficiary.legalName };
  return undefined;
}
