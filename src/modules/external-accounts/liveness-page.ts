import { escapeHtml, hostedPage, hostedPageHeaders } from '../../platform/http/hosted-page.js';
import type { LivenessSession } from './ownership.js';

// The hosted ownership check a LIVENESS challenge links to. In sandbox it is a consent step:
// the owner confirms (the check completes, the account becomes ACTIVE) or declines (it fails,
// UNVERIFIED). The link's token is the only credential: the page is served under the one policy
// of every hosted page (platform/http/hosted-page.ts: no cache, no referrer, nonce'd script and
// style only, no framing, no sniffing), not a copy of it that could drift.

export { newNonce } from '../../platform/http/hosted-page.js';
export const livenessHeaders = hostedPageHeaders;

const TITLE = 'Verify wallet ownership';

const STYLE = `body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a}
code{word-break:break-all}button{font-size:1rem;padding:.5rem 1rem;margin:.5rem .5rem 0 0}#status{font-weight:600;margin-top:1rem}`;

export function unknownLinkPage(nonce: string): string {
  return hostedPage(nonce, TITLE, STYLE, '<h1>Link not valid</h1><p>This verification link does not exist or was already used. Ask for a new one.</p>');
}

/**
 * A link past its expiry (GET: 410, as the KYC page answers for an expired link) shows only that
 * it expired: no form, so nobody is invited to click what can only record a failed attempt (an
 * answer POSTed anyway still does, README.md). A used link has no challenge left and is unknown.
 */
function expiredLinkPage(nonce: string): string {
  return hostedPage(nonce, TITLE, STYLE, '<h1>Link not valid</h1><p id="gone">This verification link has expired. Ask for a new one.</p>');
}

/** The status a GET of the link answers with its page: 404 unknown (or used), 410 expired, 200 the form. */
export function livenessPageStatus(session: LivenessSession | undefined): 200 | 404 | 410 {
  return !session ? 404 : session.expired ? 410 : 200;
}

export function livenessPage(nonce: string, session: LivenessSession): string {
  if (session.expired) return expiredLinkPage(nonce);
  const body = `<h1>${TITLE}</h1>
<p>Wallet <code id="address">${escapeHtml(session.address)}</code> on ${escapeHtml(session.network)}.</p>
<p>This check is valid until ${escapeHtml(session.expiresAt)}.</p>
<form id="check"><label><input type="checkbox" id="consent"> I am the owner of this wallet and consent to the identity check.</label><br>
<button type="submit" id="complete">Complete the check</button><button type="button" id="decline">Decline</button></form>
<p id="status" role="status"></p>`;
  const script = `const status=document.getElementById('status');
async function answer(consent){status.textContent='sending…';
const r=await fetch(location.pathname,{method:'POST',headers:{'content-type':'application/json'},body:JSON.stringify({consent})});
const b=await r.json().catch(()=>({}));status.textContent=r.ok?(b.outcome==='VERIFIED'?'verified':'not verified ('+b.reason+')'):(b.message||'failed');
document.getElementById('complete').disabled=true;document.getElementById('decline').disabled=true;}
document.getElementById('check').addEventListener('submit',e=>{e.preventDefault();if(!document.getElementById('consent').checked){status.textContent='tick the consent box first';return;}answer(true);});
document.getElementById('decline').addEventListener('click',()=>answer(false));`;
  return hostedPage(nonce, TITLE, STYLE, body, script);
}
