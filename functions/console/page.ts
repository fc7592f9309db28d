import type { JobOptions } from '#core/options';

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

/** What the console's form takes from the API: its options' defaults and limits, written once in core. */
export interface ConsoleSettings {
  defaults: Pick<
    JobOptions,
    'dual_channel' | 'punctuate' | 'speaker_diarization' | 'tldr' | 'short_hand_notes'
  > & {
    language: string;
  };
  languages: readonly string[];
  maxCustomLength: number;
  maxSpeakersExpected: number;
  retentionDays: { min: number; max: number; default: number };
  maxDirectUploadBytes: number;
  maxUploadBytes: number;
}

const escapeHtml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** A label that names the option as the API does, so that the form teaches the API. */
const optionLabel = (name: keyof JobOptions, text: string) => `${text} <code>${name}</code>`;

/**
 * One control per option of the API (a new option fails the type check until it has one), each with
 * the API's default.
 */
function optionControls(settings: ConsoleSettings): Record<keyof JobOptions, string> {
  const flag = (name: keyof ConsoleSettings['defaults'] & keyof JobOptions, text: string, hint: string) =>
    `<div class="check"><input type="checkbox" id="opt-${name}" name="${name}"${settings.defaults[name] ? ' checked' : ''} aria-describedby="opt-${name}-hint">` +
    `<label for="opt-${name}">${optionLabel(name, text)}</label><p id="opt-${name}-hint" class="hint">${hint}</p></div>`;
  const { retentionDays } = settings;
  return {
    speaker_diarization: flag('speaker_diarization', 'Tell speakers apart', 'Words and turns get S1, S2, …'),
    dual_channel: flag('dual_channel', 'Dual channel', 'Transcribe the two channels of a stereo file apart.'),
    punctuate: flag('punctuate', 'Punctuation and capitals', 'Off: lower case without marks.'),
    tldr: flag('tldr', 'TL;DR', 'A short summary.'),
    short_hand_notes: flag('short_hand_notes', 'Shorthand notes', 'Notes in a few lines.'),
    speakers_expected:
      `<div><label for="opt-speakers_expected">${optionLabel('speakers_expected', 'Speakers expected')}</label>` +
      `<input id="opt-speakers_expected" name="speakers_expected" type="number" inputmode="numeric" min="1" max="${settings.maxSpeakersExpected}" disabled aria-describedby="opt-speakers_expected-hint">` +
      `<p id="opt-speakers_expected-hint" class="hint">A hint, with speakers told apart; empty: found automatically.</p></div>`,
    language:
      `<div><label for="opt-language">${optionLabel('language', 'Language')}</label><select id="opt-language" name="language">` +
      settings.languages
        .map(
          (code) =>
            `<option value="${escapeHtml(code)}"${code === settings.defaults.language ? ' selected' : ''}>${escapeHtml(code)}</option>`,
        )
        .join('') +
      '</select></div>',
    retention_days:
      `<div><label for="opt-retention_days">${optionLabel('retention_days', 'Keep for (days)')}</label>` +
      `<input id="opt-retention_days" name="retention_days" type="number" inputmode="numeric" min="${retentionDays.min}" max="${retentionDays.max}" placeholder="${retentionDays.default}" aria-describedby="opt-retention_days-hint">` +
      `<p id="opt-retention_days-hint" class="hint">Empty: ${retentionDays.default} days.</p></div>`,
    webhook_url:
      `<div><label for="opt-webhook_url">${optionLabel('webhook_url', 'Webhook URL')}</label>` +
      `<input id="opt-webhook_url" name="webhook_url" type="url" spellcheck="false" placeholder="https://…" aria-describedby="opt-webhook_url-hint">` +
      '<p id="opt-webhook_url-hint" class="hint">A signed POST when the job ends.</p></div>',
    custom:
      `<div class="wide"><label for="opt-custom">${optionLabel('custom', 'Custom')}</label>` +
      `<textarea id="opt-custom" name="custom" rows="2" maxlength="${settings.maxCustomLength}" aria-describedby="opt-custom-hint"></textarea>` +
      '<p id="opt-custom-hint" class="hint">Any text, echoed back and searchable in the list.</p></div>',
  };
}

function newJobForm(settings: ConsoleSettings): string {
  const controls = optionControls(settings);
  const flags = ['speaker_diarization', 'dual_channel', 'punctuate', 'tldr', 'short_hand_notes'] as const;
  const fields = ['speakers_expected', 'language', 'retention_days', 'webhook_url', 'custom'] as const;
  const megabytes = (bytes: number) => `${(bytes / 1_000_000).toFixed(1)} MB`;
  return `<form id="new-form" novalidate data-max-direct-upload-bytes="${settings.maxDirectUploadBytes}" data-max-upload-bytes="${settings.maxUploadBytes}">
      <div id="drop-zone" class="drop-zone">
        <label for="audio-file">Audio or video file</label>
        <input id="audio-file" name="audio" type="file" accept="audio/*,video/*" aria-describedby="file-hint">
        <p id="file-hint" class="hint">Choose a file, or drop one here. Up to ${megabytes(settings.maxDirectUploadBytes)} goes with the form; larger files, up to ${(settings.maxUploadBytes / 2 ** 30).toFixed(0)} GiB, by presigned upload straight to storage.</p>
        <p id="file-chosen" class="chosen"></p>
      </div>
      <fieldset>
        <legend>Options</legend>
        <div class="checks">${flags.map((name) => controls[name]).join('')}</div>
        <div class="fields">${fields.map((name) => controls[name]).join('')}</div>
      </fieldset>
      <div class="actions">
        <button type="submit" id="send">Upload and transcribe</button>
      </div>
      <div class="upload-state">
        <progress id="upload-progress" max="1" value="0" aria-label="Upload progress" hidden></progress>
        <p id="upload-status" role="status" aria-live="polite"></p>
      </div>
      <p id="new-error" role="alert"></p>
    </form>`;
}

/** The console's HTML: one page whose script and style are inlined, allowed by a per-response nonce. */
export function consolePage(
  assets: { script: string; style: string },
  nonce: string,
  settings: ConsoleSettings,
): string {
  return `${pageHead('Transcription console', assets.style, nonce)}
<body>
<header>
  <h1>Transcription console</h1>
  <nav id="nav" aria-label="Console" hidden>
    <a href="#">Jobs</a>
    <a href="#new">Send a file</a>
    <button type="button" id="forget-key" class="secondary">Forget key</button>
  </nav>
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
    <p id="list-notice" role="status" aria-live="polite"></p>
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
  <section id="new-view" aria-labelledby="new-title" hidden>
    <h2 id="new-title">Send a file</h2>
    ${newJobForm(settings)}
  </section>
  <section id="detail-view" aria-labelledby="detail-title" hidden>
    <p><a href="#" id="back">← All jobs</a></p>
    <h2 id="detail-title">Job</h2>
    <div id="detail-summary" aria-live="polite"></div>
    <div id="detail-result"></div>
  </section>
  <dialog id="delete-dialog" aria-labelledby="delete-title" aria-describedby="delete-text">
    <h2 id="delete-title">Delete this job?</h2>
    <p id="delete-text">Its audio, transcript and record are removed for good. This cannot be undone.</p>
    <p id="delete-error" role="alert"></p>
    <div class="actions">
      <button type="button" class="secondary" id="cancel-delete" autofocus>Keep it</button>
      <button type="button" class="danger" id="confirm-delete">Delete job</button>
    </div>
  </dialog>
</main>
<script nonce="${nonce}">${assets.script}</script>
</body>
</html>
`;
}

/**
 * Nothing but this page's own inline code, requests to its own origin and, for a page that plays and
 * uploads audio, to the media bucket's origin (its presigned URLs).
 */
export function contentSecurityPolicy(nonce: string, mediaOrigin?: string): string {
  const sources = mediaOrigin ? `'self' ${mediaOrigin}` : "'self'";
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    `connect-src ${sources}`,
    ...(mediaOrigin ? [`media-src ${sources}`] : []),
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}
