/** The start of every page of the service, to its body: its style inlined, allowed by the nonce. */
export function pageHead(title: string, style: string, nonce: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style nonce="${nonce}">${style}</style>
</head>`;
}

/** The console's HTML: one page whose script and style are inlined, allowed by a per-response nonce. */
export function consolePage(assets: { script: string; style: string }, nonce: string): string {
  return `${pageHead('Transcription console', assets.style, nonce)}
<body>
<header>
  <h1>Transcription console</h1>
  <button type="button" id="forget-key" class="secondary" hidden>Forget key</button>
</header>
<main>
  <section id="key-view" aria-labelledby="key-title" hidden>
    <h2 id="key-title">Open your jobs</h2>
    <form id="key-form" autocomplete="off">
      <label for="api-key">API key</label>
      <div class="key-row">
        <input id="api-key" name="api-key" type="password" spellcheck="false" aria-describedby="key-hint key-error" required>
        <button type="submit">Open console</button>
      </div>
      <p id="key-hint" class="hint">The key stays in this browser tab only and is never part of the page address.</p>
      <p id="key-error" role="alert"></p>
    </form>
  </section>
  <section id="list-view" aria-labelledby="list-title" hidden>
    <h2 id="list-title">Jobs of the last 90 days</h2>
    <form class="filters" role="search" aria-label="Filter jobs">
      <div>
        <label for="status-filter">Status</label>
        <select id="status-filter">
          <option value="">All</option>
          <option value="queued">Queued</option>
          <option value="processing">Processing</option>
          <option value="completed">Completed</option>
          <option value="error">Error</option>
        </select>
      </div>
      <div>
        <label for="search">Search id or custom</label>
        <input id="search" type="search" spellcheck="false">
      </div>
    </form>
    <p id="list-status" class="caption" role="status" aria-live="polite"></p>
    <table>
      <caption class="caption">Newest first. Times are in your time zone; active jobs refresh on their own.</caption>
      <thead><tr><th scope="col">Submitted</th><th scope="col">Job</th><th scope="col">Status</th><th scope="col">Options</th><th scope="col">Custom</th><th scope="col">Duration</th></tr></thead>
      <tbody id="jobs"></tbody>
    </table>
    <button type="button" id="load-more" class="secondary" hidden>Load more</button>
  </section>
  <section id="detail-view" aria-labelledby="detail-title" hidden>
    <p><a href="#" id="back">← All jobs</a></p>
    <h2 id="detail-title">Job</h2>
    <div id="detail-body" aria-live="polite"></div>
  </section>
</main>
<script nonce="${nonce}">${assets.script}</script>
</body>
</html>
`;
}

/** Nothing but this page's own inline code and requests to its own origin. */
export function contentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}
