// The yardstick: a bare node:http server answering a fixed ~300-byte JSON body.
import { createServer } from 'node:http';

const body = JSON.stringify({
  id: 'PlatformConfig:019542f5-b3e7-1d02-0000-000000000001',
  supportedCurrencies: [{ currencyCode: 'USD', minAmount: 1, maxAmount: 100000000, enabledTransactionTypes: ['INCOMING', 'OUTGOING'] }],
  isRegulatedFinancialInstitution: false,
  feeConfigs: [],
  createdAt: '2025-10-13T15:30:01.000Z',
  updatedAt: '2025-10-13T15:30:01.000Z',
});

createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}).listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('listening\n'));
