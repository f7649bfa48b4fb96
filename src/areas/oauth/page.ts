// The approval page a user sees at /oauth/authorize: plain, accessible HTML with no script.
import { SCOPE_DESCRIPTIONS, type Scope } from '../../platform/scopes.js';
import type { AuthorizationRequest } from './service.js';

const escapeHtml = (value: string) =>
  value.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char] as string);

const STYLE = `
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;background:#f4f5f7;color:#1d2330;margin:0;padding:2rem 1rem}
main{max-width:32rem;margin:0 auto;background:#fff;border-radius:10px;box-shadow:0 1px 4px rgba(0,0,0,.12);padding:2rem}
h1{font-size:1.35rem;margin:0 0 .5rem}
p{line-height:1.5}
ul{padding-left:1.25rem;line-height:1.6}
label{display:block;font-weight:600;margin:1.25rem 0 .4rem}
input[type=password]{width:100%;box-sizing:border-box;padding:.6rem;font:inherit;border:1px solid #8a93a6;border-radius:6px}
.hint{color:#4a5468;font-size:.9rem;margin:.35rem 0 0}
.actions{display:flex;gap:.75rem;margin-top:1.5rem}
button{font:inherit;padding:.6rem 1.2rem;border-radius:6px;border:1px solid #1d4ed8;cursor:pointer}
button[value=approve]{background:#1d4ed8;color:#fff}
button[value=cancel]{background:#fff;color:#1d4ed8}
.error{background:#fdecec;border:1px solid #d93025;color:#8c1d18;padding:.75rem;border-radius:6px}
code{background:#eef0f4;padding:.1rem .3rem;border-radius:4px}
:focus-visible{outline:3px solid #b45309;outline-offset:2px}
`;

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>`;
}

export function approvalPage(request: AuthorizationRequest, formToken: string, problem?: string): string {
  const scopes = request.scopes
    .map((scope) => `<li><strong>${escapeHtml(SCOPE_DESCRIPTIONS[scope as Scope])}</strong> <code>${escapeHtml(scope)}</code></li>`)
    .join('\n');
  const hidden = {
    response_type: 'code',
    client_id: request.app.clientId,
    redirect_uri: request.redirectUri,
    scope: request.scopes.join(' '),
    state: request.state,
    code_challenge: request.codeChallenge,
    code_challenge_method: 'S256',
    csrf: formToken,
  };
  const fields = Object.entries(hidden)
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`)
    .join('\n');
  return layout(
    `${problem ? 'Error: ' : ''}Connect ${request.app.name}`,
    `<h1>Connect <span id="app-name">${escapeHtml(request.app.name)}</span> to your account?</h1>
<p><strong>${escapeHtml(request.app.name)}</strong> is asking for permission to:</p>
<ul id="scopes">
${scopes}
</ul>
<p class="hint">It will be able to do this for up to 30 days, until you revoke it, or until the API key you use below expires or is revoked. After connecting you will be sent to <code>${escapeHtml(new URL(request.redirectUri).origin)}</code>.</p>
${problem ? `<p class="error" role="alert" id="error">${escapeHtml(problem)}</p>` : ''}
<form method="post" action="/oauth/authorize">
${fields}
<label for="api_key">Your API key</label>
<input type="password" id="api_key" name="api_key" required autocomplete="off" spellcheck="false" ${
      problem ? 'autofocus aria-invalid="true" aria-describedby="error api-key-hint"' : 'aria-describedby="api-key-hint"'
    }>
<p class="hint" id="api-key-hint">The key is used once to approve; it is not shared with ${escapeHtml(request.app.name)}.</p>
<div class="actions">
<button type="submit" name="action" value="approve">Connect</button>
<button type="submit" name="action" value="cancel" formnovalidate>Cancel</button>
</div>
</form>`,
  );
}

export function errorPage(message: string): string {
  return layout(
    'Cannot connect this application',
    `<h1>This application cannot be connected</h1>
<p class="error" role="alert">${escapeHtml(message)}</p>
<p>The link that brought you here is not valid. You can close this page; nothing was shared.</p>`,
  );
}
