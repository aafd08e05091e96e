import { escapeHtml as esc, hostedPage } from '../../platform/http/hosted-page.js';
import { MAX_DOCUMENT_NUMBER_LENGTH, TWO_SIDED_TYPES } from '../documents/index.js';
import type { Holder, KycPageModel } from './kyc-links.js';
import type { VerificationError } from './schemas.js';

// The hosted verification page of a KYC link: plain server-rendered HTML and a small script.
// Each step (fields, one upload) is its own request; after one succeeds the page reloads and
// shows what is still missing, so the server's list is the only state.

const STYLE = `body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}
fieldset{margin:1rem 0;border:1px solid #ccc;padding:.75rem}label{display:block;margin:.4rem 0}input,select{font-size:1rem;margin-left:.3rem}
button{font-size:1rem;padding:.4rem .9rem;margin-top:.5rem}#status{font-weight:600;margin-top:1rem;white-space:pre-line}.todo li{margin:.3rem 0}`;

const TITLE = 'Verify your identity';

export function kycGonePage(nonce: string, state: 'UNKNOWN' | 'USED' | 'EXPIRED' | 'WITHDRAWN'): string {
  const text = {
    UNKNOWN: 'This verification link does not exist. Ask for a new one.',
    USED: 'This verification was already submitted. There is nothing more to do here.',
    EXPIRED: 'This verification link has expired. Ask for a new one.',
    WITHDRAWN: 'This verification link is no longer valid.',
  }[state];
  return hostedPage(nonce, TITLE, STYLE, `<h1>Link not valid</h1><p id="gone">${text}</p>`);
}

const FIELD_INPUTS: Record<string, string> = {
  fullName: '<label>Full name <input id="fullName" name="fullName" autocomplete="name" maxlength="255"></label>',
  birthDate: '<label>Date of birth <input id="birthDate" name="birthDate" type="date"></label>',
  nationality: '<label>Nationality (two-letter country code) <input id="nationality" name="nationality" maxlength="2" size="3"></label>',
  address:
    '<fieldset><legend>Address</legend>' +
    '<label>Street <input id="address-line1" name="line1" maxlength="255"></label>' +
    '<label>Line 2 <input id="address-line2" name="line2" maxlength="255"></label>' +
    '<label>City <input id="address-city" name="city" maxlength="100"></label>' +
    '<label>State <input id="address-state" name="state" maxlength="100"></label>' +
    '<label>Postal code <input id="address-postalCode" name="postalCode" maxlength="20"></label>' +
    '<label>Country (two-letter code) <input id="address-country" name="country" maxlength="2" size="3"></label></fieldset>',
};

function options(values: readonly string[]): string {
  return values.map((v) => `<option value="${esc(v)}">${esc(v.replaceAll('_', ' ').toLowerCase())}</option>`).join('');
}

/** One upload form: a new document for a holder, or a replacement of one on file. */
function uploadForm(target: { holder: Holder; replaces?: string }, types: readonly string[], reason: string): string {
  const twoSided = types.some((t) => TWO_SIDED_TYPES.has(t as never));
  const data = target.replaces ? `data-document="${esc(target.replaces)}"` : `data-holder="${esc(target.holder.id)}"`;
  const holderPart = target.replaces ? '' : `<input type="hidden" name="documentHolder" value="${esc(target.holder.id)}">`;
  return `<form class="upload" ${data}><fieldset><legend>${esc(reason)}</legend>${holderPart}
<label>Document <select name="documentType">${options(types)}</select></label>
<label>Issuing country (two-letter code) <input name="country" maxlength="2" size="3" value="${esc(target.holder.country ?? '')}" required></label>
<label>Document number (optional) <input name="documentNumber" maxlength="${MAX_DOCUMENT_NUMBER_LENGTH}"></label>
${twoSided ? '<label>Side <select name="side"><option value="">not applicable</option><option value="FRONT">front</option><option value="BACK">back</option></select></label>' : ''}
<label>File (PDF, JPEG or PNG, up to 10 MiB) <input name="file" type="file" accept="application/pdf,image/jpeg,image/png" required></label>
<button type="submit">Upload</button></fieldset></form>`;
}

function sections(model: Extract<KycPageModel, { state: 'OPEN' }>): { fields: string[]; uploads: string[]; platformOnly: string[] } {
  const holders = new Map(model.holders.map((h) => [h.id, h]));
  const fields: string[] = [];
  const uploads: string[] = [];
  const platformOnly: string[] = [];
  const replaced = new Set<string>();
  const fallbackHolder = model.holders[0]!;
  for (const problem of model.problems as VerificationError[]) {
    if (problem.type === 'MISSING_FIELD' && problem.field?.startsWith('customer.')) {
      const field = problem.field.slice('customer.'.length);
      if (FIELD_INPUTS[field]) fields.push(field);
    } else if (problem.type === 'MISSING_BENEFICIAL_OWNER' || problem.type === 'MISSING_CONTROL_PERSON') {
      platformOnly.push(problem.reason);
    } else if (problem.resourceId.startsWith('Document:')) {
      const document = model.documents.get(problem.resourceId);
      if (!document) continue;
      const holder = holders.get(document.holder) ?? fallbackHolder;
      if (problem.code === 'INCOMPLETE' && problem.field === 'side') {
        // The other side is missing: it is a new document of the same type, not a replacement.
        uploads.push(uploadForm({ holder }, [document.type], problem.reason));
      } else if (!replaced.has(problem.resourceId)) {
        replaced.add(problem.resourceId);
        uploads.push(uploadForm({ holder, replaces: problem.resourceId }, problem.acceptedDocumentTypes ?? [document.type], `Replace your ${document.type.replaceAll('_', ' ').toLowerCase()}: ${problem.reason}`));
      }
    } else if (problem.acceptedDocumentTypes) {
      uploads.push(uploadForm({ holder: holders.get(problem.resourceId) ?? fallbackHolder }, problem.acceptedDocumentTypes, problem.reason));
    }
  }
  return { fields, uploads, platformOnly };
}

const SCRIPT = `const status=document.getElementById('status');const base=location.pathname;
function show(b,fallback){const errs=(b&&b.details&&b.details.errors)||[];status.textContent=(b&&b.message||fallback)+(errs.length?'\\n'+errs.map(e=>e.field+': '+e.message).join('\\n'):'');}
async function send(method,path,body,headers){status.textContent='sending…';
const r=await fetch(base+path,{method,headers:headers||{},body});const b=await r.json().catch(()=>({}));return {ok:r.ok,b};}
const fields=document.getElementById('fields');
if(fields)fields.addEventListener('submit',async e=>{e.preventDefault();const body={};
for(const id of ['fullName','birthDate','nationality']){const el=document.getElementById(id);if(el&&el.value.trim())body[id]=el.value.trim();}
const line1=document.getElementById('address-line1');if(line1){const a={};for(const k of ['line1','line2','city','state','postalCode','country']){const v=document.getElementById('address-'+k).value.trim();if(v)a[k]=v;}if(Object.keys(a).length)body.address=a;}
const {ok,b}=await send('POST','/fields',JSON.stringify(body),{'content-type':'application/json'});if(ok)location.reload();else show(b,'could not save');});
for(const form of document.querySelectorAll('form.upload'))form.addEventListener('submit',async e=>{e.preventDefault();const data=new FormData(form);
for(const k of ['documentNumber','side'])if(data.has(k)&&!String(data.get(k)).trim())data.delete(k);
const replaces=form.dataset.document;
const {ok,b}=await send(replaces?'PUT':'POST',replaces?'/documents/'+encodeURIComponent(replaces):'/documents',data);if(ok)location.reload();else show(b,'upload failed');});
document.getElementById('submit').addEventListener('click',async()=>{const {ok,b}=await send('POST','/submit');
if(!ok){show(b,'could not submit');return;}document.getElementById('submit').disabled=true;
status.textContent='submitted: '+b.verificationStatus;if(b.redirectUri)location.assign(b.redirectUri);});`;

export function kycPage(nonce: string, model: Extract<KycPageModel, { state: 'OPEN' }>): string {
  const { fields, uploads, platformOnly } = sections(model);
  const heading = model.customerType === 'BUSINESS' ? 'Verify your business' : TITLE;
  const todo = model.problems.length
    ? `<p>What is still needed:</p><ul class="todo" id="todo">${model.problems.map((p) => `<li>${esc(p.reason)}</li>`).join('')}</ul>`
    : '<p id="ready">Everything needed is on file. Submit to start the review.</p>';
  const fieldForm = fields.length
    ? `<form id="fields"><fieldset><legend>Your details</legend>${[...new Set(fields)].map((f) => FIELD_INPUTS[f]).join('')}<button type="submit" id="save-fields">Save details</button></fieldset></form>`
    : '';
  const platformNote = platformOnly.length ? `<p id="platform-only">Your provider adds these for you: ${platformOnly.map(esc).join(' ')}</p>` : '';
  const body = `<h1>${heading}</h1><p>This link is valid until <span id="expires">${esc(model.expiresAt)}</span>.</p>${todo}${fieldForm}${uploads.join('')}${platformNote}
<button type="button" id="submit">Submit for review</button><p id="status" role="status"></p>`;
  return hostedPage(nonce, TITLE, STYLE, body, SCRIPT);
}
