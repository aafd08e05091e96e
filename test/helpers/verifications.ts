import { expect } from 'vitest';
import type { App } from '../../src/app.js';
import type { DocumentType } from '../../src/modules/documents/catalogue.js';
import { BASE, type TestPlatform } from './context.js';
import { validPdf } from './document-files.js';
import { sendDocumentForm, textParts } from './multipart.js';

type Body = Record<string, unknown>;
export type Verification = { id: string; customerId: string; verificationStatus: string; errors: Body[]; createdAt: string; updatedAt: string };

/** Uploads a real (screened) PDF as `documentType` of `holder` over HTTP; 201 expected. */
export async function uploadPdf(app: App, platform: TestPlatform, holder: unknown, documentType: DocumentType, extra: Record<string, string | undefined> = {}): Promise<Body> {
  const response = await sendDocumentForm(app, platform, 'POST', '/documents', [
    ...textParts({ documentHolder: String(holder), documentType, country: 'US', ...extra }),
    { name: 'file', filename: `${documentType}.pdf`, contentType: 'application/pdf', data: await validPdf() },
  ]);
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body;
}

/** An INDIVIDUAL with every field a KYC review asks for (so a verification opens on it), created over HTTP; 201 expected. */
export async function createReviewableIndividual(app: App, platform: TestPlatform, platformCustomerId: string): Promise<Body> {
  const response = await app.inject({
    method: 'POST',
    url: `${BASE}/customers`,
    headers: { authorization: platform.auth },
    payload: {
      customerType: 'INDIVIDUAL',
      platformCustomerId,
      fullName: 'Jane Doe',
      birthDate: '1990-01-15',
      nationality: 'US',
      address: { line1: '1 Main St', postalCode: '62701', country: 'US' },
      idType: 'SSN',
      identifier: '123-45-6789',
    },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body;
}

/** POST /verifications for the customer; 200 expected. */
export async function startVerification(app: App, platform: TestPlatform, customerId: unknown): Promise<Verification> {
  const response = await app.inject({ method: 'POST', url: `${BASE}/verifications`, headers: { authorization: platform.auth }, payload: { customerId } as object });
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as Verification;
}
