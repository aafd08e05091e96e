import type bolt11Module from 'bolt11';
import { createHash, createHmac, hkdfSync } from 'node:crypto';
import { loadOnFirstUse } from '../../platform/load-on-first-use.js';

// bolt11 brings bitcoinjs-lib and lodash (some 170 modules): loaded on the first invoice, not at start-up.
export const bolt11 = loadOnFirstUse<typeof bolt11Module>('bolt11');

export const NETWORKS = {
  // BOLT 11 prefixes: lnbc (mainnet) for production platforms, lnbcrt (regtest) for sandbox ones.
  production: { bech32: 'bc', pubKeyHash: 0x00, scriptHash: 0x05, validWitnessVersions: [0, 1] },
  sandbox: { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, validWitnessVersions: [0, 1] },
};

export const INVOICE_EXPIRY_SECONDS = 600;

export interface IssuedInvoice {
  invoice: string;
  paymentHash: string;
  amountMsats: bigint;
}

/**
 * The simulated Lightning node that receives UMA payments. Its invoices are real BOLT 11 (any
 * wallet or library decodes them) signed by one node key derived from the master key, so every
 * process of a deployment signs as the same node. A payment's preimage is derived from its id,
 * so nothing secret about it is stored.
 */
export class LightningNode {
  private readonly nodeKey: Buffer;

  constructor(masterKey: Buffer) {
    this.nodeKey = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'corridor/uma-lightning-node', 32));
  }

  preimage(paymentId: string): Buffer {
    return createHmac('sha256', this.nodeKey).update(paymentId).digest();
  }

  /** `descriptionHashOf` is what LUD-06 commits to: the LNURL metadata (plus payer data, LUD-18). */
  issue(paymentId: string, amountMsats: bigint, descriptionHashOf: string, now: Date, environment: 'sandbox' | 'production'): IssuedInvoice {
    const paymentHash = createHash('sha256').update(this.preimage(paymentId)).digest('hex');
    const unsigned = bolt11().encode({
      network: NETWORKS[environment],
      millisatoshis: String(amountMsats),
      timestamp: Math.floor(now.getTime() / 1000),
      tags: [
        { tagName: 'payment_hash', data: paymentHash },
        { tagName: 'payment_secret', data: createHmac('sha256', this.nodeKey).update(`secret:${paymentId}`).digest('hex') },
        { tagName: 'purpose_commit_hash', data: createHash('sha256').update(descriptionHashOf, 'utf8').digest('hex') },
        { tagName: 'expire_time', data: INVOICE_EXPIRY_SECONDS },
        { tagName: 'min_final_cltv_expiry', data: 144 },
      ],
    });
    return { invoice: bolt11().sign(unsigned, this.nodeKey).paymentRequest!, paymentHash, amountMsats };
  }
}
