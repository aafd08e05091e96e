import { Currency, getLnurlpResponse, KycStatus, parseLnurlpRequest } from '@uma-sdk/core';
import { createServer, type Server } from 'node:http';
import { selfSignedChains, type Secp256k1Key } from '../../src/modules/uma/certificates.js';

/** A VASP played by a test with the UMA SDK itself: serves whatever chain it is told and answers lnurlp as it is told. */
export interface FakeVasp {
  domain: string;
  signing: Secp256k1Key;
  chainPem: string;
  lnurlp: (url: URL) => Promise<{ status: number; body: string }>;
  /** Its answer to a pay request at `/payreq` (default 404). */
  payreq: (body: string) => Promise<{ status: number; body: string }>;
  server: Server;
}

/** Valid from an hour ago: a test context's manual clock may stand a while before the chain is made. */
export function fakeChain(now = new Date(Date.now() - 3_600_000)) {
  const chains = selfSignedChains('fake VASP', now);
  return { key: chains.signing.key, chainPem: chains.signing.chainPem, encryptionPem: chains.encryption.chainPem };
}

function hexChain(pem: string): string[] {
  return [...pem.matchAll(/-----BEGIN CERTIFICATE-----([\s\S]+?)-----END CERTIFICATE-----/g)].map((m) => Buffer.from(m[1]!.replace(/\s/g, ''), 'base64').toString('hex'));
}

export async function startFakeVasp(): Promise<FakeVasp> {
  const initial = fakeChain();
  const state = {
    signing: initial.key,
    chainPem: initial.chainPem,
    lnurlp: async (url: URL) => signedLnurlpAnswer(url, state.signing),
    payreq: async (_body: string) => ({ status: 404, body: '{}' }),
  } as FakeVasp;
  const server = createServer((req, res) => {
    const url = new URL(req.url!, `http://${req.headers.host}`);
    if (url.pathname === '/.well-known/lnurlpubkey') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ signingCertChain: hexChain(state.chainPem), encryptionCertChain: hexChain(state.chainPem) }));
      return;
    }
    if (url.pathname.startsWith('/.well-known/lnurlp/')) {
      void state.lnurlp(url).then(({ status, body }) => {
        res.statusCode = status;
        res.setHeader('content-type', 'application/json');
        res.end(body);
      });
      return;
    }
    if (url.pathname === '/payreq' && req.method === 'POST') {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        void state.payreq(Buffer.concat(chunks).toString()).then(({ status, body }) => {
          res.statusCode = status;
          res.setHeader('content-type', 'application/json');
          res.end(body);
        });
      });
      return;
    }
    res.statusCode = 404;
    res.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.server = server;
  state.domain = `127.0.0.1:${(server.address() as { port: number }).port}`;
  return state;
}

/** What a receiving VASP built on the SDK answers. */
export async function signedLnurlpAnswer(url: URL, key: Secp256k1Key): Promise<{ status: number; body: string }> {
  const request = parseLnurlpRequest(url);
  const response = await getLnurlpResponse({
    request,
    privateKeyBytes: key.privateKey,
    requiresTravelRuleInfo: true,
    callback: `http://${url.host}/payreq`,
    encodedMetadata: JSON.stringify([['text/plain', 'pay']]),
    minSendableSats: 1,
    maxSendableSats: 10_000_000,
    payerDataOptions: { name: { mandatory: true }, email: { mandatory: false } },
    currencyOptions: [new Currency('PHP', 'Philippine Peso', '₱', 17.2, 100, 5_000_000, 2)],
    receiverKycStatus: KycStatus.Verified,
  });
  return { status: 200, body: response.toJsonString() };
}

