import type { DbOrTx } from '../../platform/db/database.js';
import { currency as currencyOf, minorUnits } from '../../platform/currencies.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { amountToWire, MAX_WIRE_AMOUNT } from '../../platform/money.js';
import { requireUmaAddress } from '../../platform/uma-address.js';
import { getConfigRow } from '../config/index.js';
import { findLiveCustomerById, findLiveCustomerByUmaAddress } from '../customers/index.js';
import { checkExternalOwner, findExternalAccount } from '../external-accounts/index.js';
import { convertDown, corridorRate, formatRate, RATE_WINDOW_MS, type ExchangeRates } from '../rates/index.js';
import { findLookup, insertLookup } from './repo.js';
import type { ReceiverExternalAccountLookupResponse, ReceiverLookupQuery } from './schemas.js';

interface Caller {
  platformId: string;
  environment: 'sandbox' | 'production';
}

/**
 * The sending customer of a receiver lookup (this module's and uma's GET /receiver/uma), by id or
 * by UMA address: one is required, both given must name the same live customer.
 */
export async function findLookupSender(db: DbOrTx, platformId: string, query: Pick<ReceiverLookupQuery, 'customerId' | 'senderUmaAddress'>) {
  if (!query.customerId && !query.senderUmaAddress) {
    throw invalidInput([
      { field: 'customerId', message: 'is required when senderUmaAddress is not given' },
      { field: 'senderUmaAddress', message: 'is required when customerId is not given' },
    ]);
  }
  if (query.senderUmaAddress !== undefined) requireUmaAddress('senderUmaAddress', query.senderUmaAddress);
  const byId = query.customerId ? await findLiveCustomerById(db, platformId, parseId('Customer', query.customerId)!) : undefined;
  const byAddress = query.senderUmaAddress ? await findLiveCustomerByUmaAddress(db, platformId, query.senderUmaAddress) : undefined;
  if (query.customerId && !byId) throw new AppError('USER_NOT_FOUND', `Customer ${query.customerId} not found.`);
  if (query.senderUmaAddress && !byAddress) throw new AppError('USER_NOT_FOUND', `No customer of yours has the UMA address ${query.senderUmaAddress}.`);
  if (byId && byAddress && byId.id !== byAddress.id) {
    throw invalidInput([{ field: 'senderUmaAddress', message: 'is not the UMA address of the customer customerId names' }]);
  }
  return (byId ?? byAddress)!;
}

/**
 * GET /receiver/external-account/{accountId}: what the sender can pay the account — its
 * currency, at the rate a quote would use now, between the platform's limits for the sending
 * currency converted at that rate. The sending currency is the first of the platform's sending
 * currencies (supportedCurrencies with OUTGOING, in its order) the sender holds, else the platform's first. The
 * lookup is stored (receiver_lookups) for a later quote to name by `lookupId`.
 */
export async function lookupExternalAccount(
  db: DbOrTx,
  rates: ExchangeRates,
  caller: Caller,
  accountId: string,
  query: ReceiverLookupQuery,
  now: Date,
): Promise<ReceiverExternalAccountLookupResponse> {
  const account = await findExternalAccount(db, caller.platformId, accountId);
  // A quote to it would be refused (410): the lookup does not offer what cannot be paid.
  await checkExternalOwner(db, caller.platformId, account, 'destination');
  const sender = await findLookupSender(db, caller.platformId, query);
  const config = await getConfigRow(db, caller.platformId);
  const sendable = config.supported_currencies.filter((c) => c.enabledTransactionTypes.includes('OUTGOING'));
  const sending = sendable.find((c) => sender.currencies?.includes(c.currencyCode)) ?? sendable[0];
  if (!sending) throw invalidInput([{ field: 'customerId', message: 'cannot send: the platform sends from no currency (supportedCurrencies with OUTGOING)' }]);

  const snapshot = await rates.snapshot(caller.environment);
  const corridor = corridorRate(snapshot, sending.currencyCode, account.currency);
  const convert = (amount: number) => convertDown(BigInt(amount), corridor.rate, minorUnits(sending.currencyCode), minorUnits(account.currency));
  // No quote pays more than the API carries exactly (2^53 − 1 minor units): the limits stop there
  // too, so a platform's large maxAmount in a currency worth many of the receiver's is no 500.
  const capped = (amount: bigint) => (amount < MAX_WIRE_AMOUNT ? amount : MAX_WIRE_AMOUNT);
  const min = capped(convert(sending.minAmount) > 0n ? convert(sending.minAmount) : 1n);
  const max = capped(convert(sending.maxAmount) > min ? convert(sending.maxAmount) : min);
  const receiving = currencyOf(account.currency);
  const lookupUuid = uuidv7(now.getTime());
  const response: ReceiverExternalAccountLookupResponse = {
    supportedCurrencies: [
      {
        currency: { code: receiving.code, name: receiving.name, symbol: receiving.symbol, decimals: receiving.decimals },
        estimatedExchangeRate: Number(formatRate(corridor.rate)),
        min: amountToWire(min),
        max: amountToWire(max),
      },
    ],
    lookupId: formatId('LookupRequest', lookupUuid),
    accountId: account.id,
  };
  await insertLookup(db, {
    platform_id: caller.platformId,
    id: lookupUuid,
    external_account_id: account.uuid,
    sender_customer_id: sender.id,
    response,
    created_at: now,
    // As long as the rate it shows: the rest of its cache window at most.
    expires_at: new Date(now.getTime() + RATE_WINDOW_MS),
  });
  return response;
}

/**
 * The lookup a quote to an account names by `lookupId`: this platform's and not expired, else
 * 404 LOOKUP_REQUEST_NOT_FOUND, as uma's `findUmaLookup` answers for a UMA lookup. Another
 * platform's and an expired one (kept an hour for the purge) answer exactly as an unknown one.
 * `accountUuid`/`accountId`: the external account it was made for (null: the account's row is gone);
 * `senderUuid`: the customer it was made for.
 */
export async function findReceiverLookup(db: DbOrTx, platformId: string, lookupId: string, now: Date): Promise<{ accountUuid: string | null; accountId: string | null; senderUuid: string | null }> {
  const uuid = parseId('LookupRequest', lookupId);
  const row = uuid ? await findLookup(db, platformId, uuid) : undefined;
  if (!row || row.expires_at <= now) throw new AppError('LOOKUP_REQUEST_NOT_FOUND', `Lookup ${lookupId} not found or expired; look the receiver up again.`);
  const accountUuid = row.external_account_id;
  return { accountUuid, accountId: accountUuid === null ? null : formatId('ExternalAccount', accountUuid), senderUuid: row.sender_customer_id };
}
