/**
 * The web console: a tenant's jobs of the last 90 days and their transcripts. Runs in the browser,
 * bundled by esbuild into the page that GET /console serves. It talks only to this API, with the key
 * kept in sessionStorage and sent in request URLs, never in the page's own address. Every text that
 * comes from the API is set with textContent.
 */
import type { JobSummary, StatusRecord } from '#core/job';
import { groupTurns, type TranscriptResult } from '#core/result';

const KEY_STORAGE = 'transcription-console.api-key';
const REFRESH_MS = 3000;
const PAGE_SIZE = 25;
const ACTIVE = new Set(['queued', 'processing']);

interface JobList {
  jobs: JobSummary[];
  next_cursor: string | null;
}

class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const state = {
  jobs: [] as JobSummary[],
  cursor: null as string | null,
  status: '',
  query: '',
  refreshTimer: 0,
  detailTimer: 0,
};

const element = <T extends HTMLElement>(id: string): T => {
  const found = document.getElementById(id);
  if (!found) throw new Error(`#${id} is missing`);
  return found as T;
};

function make<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  properties: Partial<{ text: string; className: string; title: string }> = {},
  children: (Node | string)[] = [],
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (properties.text !== undefined) node.textContent = properties.text;
  if (properties.className) node.className = properties.className;
  if (properties.title) node.title = properties.title;
  node.append(...children);
  return node;
}

function apiKey(): string | null {
  return sessionStorage.getItem(KEY_STORAGE);
}

/** A request to the API beside this page (the stage prefix, if any, comes from the page's address). */
async function request(path: string, parameters: Record<string, string>): Promise<Response> {
  const url = new URL(path, document.baseURI);
  for (const [name, value] of Object.entries(parameters)) if (value) url.searchParams.set(name, value);
  url.searchParams.set('x-api-key', apiKey() ?? '');
  const response = await fetch(url, { headers: { accept: 'application/json' } });
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    throw new ApiFailure(
      response.status,
      body?.error?.code ?? 'error',
      body?.error?.message ?? response.statusText,
    );
  }
  return response;
}

async function requestJson<T>(path: string, parameters: Record<string, string>): Promise<T> {
  return (await request(path, parameters)).json() as Promise<T>;
}

function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return '—';
  const seconds = Math.round(ms / 1000);
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = String(seconds % 60).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${rest}` : `${minutes}:${rest}`;
}

function formatTime(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

function optionsOf(job: JobSummary): string {
  const flags: [boolean, string][] = [
    [job.dual_channel, 'dual channel'],
    [job.speaker_diarization, 'speakers'],
    [job.punctuate, 'punctuation'],
    [job.tldr, 'tldr'],
    [job.short_hand_notes, 'notes'],
  ];
  return [job.language, ...flags.filter(([on]) => on).map(([, name]) => name)].join(' · ');
}

function statusBadge(status: string): HTMLElement {
  return make('span', { text: status, className: `badge status-${status}` });
}

// ---- views -------------------------------------------------------------------------------------

function show(view: 'key' | 'list' | 'detail'): void {
  element('key-view').hidden = view !== 'key';
  element('list-view').hidden = view !== 'list';
  element('detail-view').hidden = view !== 'detail';
  element('forget-key').hidden = view === 'key';
}

function showKeyForm(message = ''): void {
  stopTimers();
  sessionStorage.removeItem(KEY_STORAGE);
  element('key-error').textContent = message;
  show('key');
  element<HTMLInputElement>('api-key').focus();
}

function stopTimers(): void {
  window.clearTimeout(state.refreshTimer);
  window.clearTimeout(state.detailTimer);
}

/** A refused key sends the user back to the key form with the reason; other errors are shown in place. */
function handleFailure(error: unknown, where: HTMLElement): void {
  if (error instanceof ApiFailure && error.status === 401) {
    showKeyForm(`The API key was not accepted: ${error.message}`);
    return;
  }
  where.textContent =
    error instanceof Error ? `Something went wrong: ${error.message}` : 'Something went wrong.';
}

async function loadJobs(append: boolean): Promise<void> {
  const status = element('list-status');
  const shown = append ? 0 : Math.min(100, Math.max(PAGE_SIZE, state.jobs.length));
  try {
    const page = await requestJson<JobList>('v1-beta/transcripts', {
      limit: String(append ? PAGE_SIZE : shown),
      status: state.status,
      q: state.query,
      cursor: append ? (state.cursor ?? '') : '',
    });
    state.jobs = append ? [...state.jobs, ...page.jobs] : page.jobs;
    state.cursor = page.next_cursor;
    renderJobs();
    status.textContent = state.jobs.length === 0 ? 'No jobs match.' : `${state.jobs.length} job(s) shown.`;
  } catch (error) {
    handleFailure(error, status);
    return;
  }
  window.clearTimeout(state.refreshTimer);
  if (state.jobs.some((job) => ACTIVE.has(job.status)) && !element('list-view').hidden) {
    state.refreshTimer = window.setTimeout(() => loadJobs(false), REFRESH_MS);
  }
}

/** A table cell that names its column, for the card layout of narrow screens. */
function cell(label: string, content: Node | string, className = ''): HTMLTableCellElement {
  const td = make('td', { className }, [content]);
  td.dataset.label = label;
  return td;
}

function renderJobs(): void {
  const rows = state.jobs.map((job) => {
    const link = make('a', { text: job.id, className: 'job-id' });
    link.href = `#job=${encodeURIComponent(job.id)}`;
    return make('tr', {}, [
      cell('Submitted', new Date(job.timestamp_submitted).toLocaleString()),
      cell('Job', link),
      cell('Status', statusBadge(job.status)),
      cell('Options', optionsOf(job)),
      cell('Custom', job.custom || '—', 'custom'),
      cell('Duration', formatDuration(job.audio_duration_ms)),
    ]);
  });
  element('jobs').replaceChildren(...rows);
  element('load-more').hidden = !state.cursor;
}

async function openJob(id: string): Promise<void> {
  stopTimers();
  show('detail');
  element('detail-title').textContent = `Job ${id}`;
  const body = element('detail-body');
  try {
    const record = await requestJson<StatusRecord>('v1-beta/transcript/status', { id });
    renderDetail(record);
    const delivering = record.webhook_status === 'pending' || record.webhook_status === 'retrying';
    if (ACTIVE.has(record.status) || delivering) {
      state.detailTimer = window.setTimeout(() => openJob(id), REFRESH_MS);
    }
  } catch (error) {
    body.replaceChildren();
    handleFailure(error, body);
  }
}

function renderDetail(record: StatusRecord): void {
  const facts: [string, Node | string][] = [
    ['Status', statusBadge(record.status)],
    ['Submitted', new Date(record.timestamp_submitted).toLocaleString()],
    [
      'Options',
      [
        record.language,
        record.dual_channel && 'dual channel',
        record.speaker_diarization && 'speakers',
        record.punctuate && 'punctuation',
      ]
        .filter(Boolean)
        .join(' · '),
    ],
    ['Custom', record.custom || '—'],
  ];
  const result = record.results?.results;
  if (result) facts.push(['Duration', formatDuration(result.audio_duration_ms)], ['Engine', result.engine]);
  if (record.webhook_status) facts.push(['Webhook', webhookDelivery(record)]);
  const list = make('dl', { className: 'facts' });
  for (const [term, value] of facts) list.append(make('dt', { text: term }), make('dd', {}, [value]));

  const parts: Node[] = [list];
  if (record.error) {
    parts.push(
      make('div', { className: 'job-error' }, [
        make('strong', { text: record.error.code }),
        ` ${record.error.message}`,
      ]),
    );
    element('detail-body').setAttribute('role', 'alert');
  }
  if (result) parts.push(...resultSections(record.id, result));
  else if (!record.error)
    parts.push(make('p', { text: 'The transcript appears here when the job is completed.' }));
  element('detail-body').replaceChildren(...parts);
}

/** How the job's webhook went: its state, the attempts, the receiver's last answer or why it got none. */
function webhookDelivery(record: StatusRecord): string {
  const attempts = record.webhook_attempts ?? 0;
  const details = [
    `${attempts} ${attempts === 1 ? 'attempt' : 'attempts'}`,
    record.webhook_response_code !== undefined && `last answer HTTP ${record.webhook_response_code}`,
  ].filter(Boolean);
  const why = record.webhook_error ? `: ${record.webhook_error}` : '';
  return `${record.webhook_status} (${details.join(', ')})${why}`;
}

function resultSections(id: string, result: TranscriptResult): Node[] {
  const sections: Node[] = [];
  const downloads = make('div', { className: 'downloads' }, [make('h3', { text: 'Download' })]);
  for (const format of ['json', 'txt', 'srt', 'vtt'] as const) {
    const button = make('button', {
      text: format.toUpperCase(),
      title: `Download the transcript as ${format.toUpperCase()}`,
    });
    button.type = 'button';
    button.addEventListener('click', () => download(id, format));
    downloads.append(button);
  }
  sections.push(downloads);
  if (result.tldr !== undefined)
    sections.push(
      make('section', {}, [make('h3', { text: 'TL;DR' }), make('p', { text: result.tldr || '—' })]),
    );
  if (result.short_hand_notes !== undefined) {
    sections.push(
      make('section', {}, [
        make('h3', { text: 'Shorthand notes' }),
        make('pre', { text: result.short_hand_notes || '—', className: 'notes' }),
      ]),
    );
  }
  sections.push(
    make('section', { className: 'transcript' }, [make('h3', { text: 'Transcript' }), ...turnsOf(result)]),
  );
  return sections;
}

/** Speaker or channel turns when known, else one paragraph; every word shows its times on hover. */
function turnsOf(result: TranscriptResult): Node[] {
  if (result.words.length === 0) return [make('p', { text: 'No speech was found in this recording.' })];
  return groupTurns(result.words).map((turn) => {
    const label = [turn.speaker, turn.channel !== undefined ? `channel ${turn.channel}` : undefined]
      .filter(Boolean)
      .join(' · ');
    const spoken = turn.words.flatMap((word, index) => {
      const span = make('span', {
        text: word.word,
        className: 'word',
        title: `${formatTime(word.startTime)} – ${formatTime(word.endTime)}`,
      });
      return index === 0 ? [span] : [' ', span];
    });
    return make('p', { className: 'turn' }, [
      ...(label ? [make('span', { text: label, className: 'speaker' }), ' '] : []),
      make('time', { text: formatTime(turn.words[0]?.startTime ?? 0), className: 'turn-time' }),
      ' ',
      ...spoken,
    ]);
  });
}

/** Downloads through fetch, so that the key never becomes a link address kept in the history. */
async function download(id: string, format: 'json' | 'txt' | 'srt' | 'vtt'): Promise<void> {
  try {
    const response =
      format === 'json'
        ? await request('v1-beta/transcript/status', { id })
        : await request('v1-beta/transcript/export', { id, format });
    const url = URL.createObjectURL(await response.blob());
    const link = make('a');
    link.href = url;
    link.download = `${id}.${format}`;
    document.body.append(link);
    link.click();
    link.remove();
    window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
  } catch (error) {
    handleFailure(error, element('detail-body'));
  }
}

function route(): void {
  if (!apiKey()) {
    showKeyForm();
    return;
  }
  const match = /^#job=(.+)$/.exec(window.location.hash);
  if (match?.[1]) {
    void openJob(decodeURIComponent(match[1]));
    return;
  }
  stopTimers();
  show('list');
  void loadJobs(false);
}

function start(): void {
  element<HTMLFormElement>('key-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const key = element<HTMLInputElement>('api-key').value.trim();
    if (!key) {
      element('key-error').textContent = 'Enter an API key.';
      return;
    }
    sessionStorage.setItem(KEY_STORAGE, key);
    element<HTMLInputElement>('api-key').value = '';
    element('key-error').textContent = '';
    route();
  });
  element('forget-key').addEventListener('click', () => {
    window.location.hash = '';
    showKeyForm();
  });
  element<HTMLSelectElement>('status-filter').addEventListener('change', (event) => {
    state.status = (event.target as HTMLSelectElement).value;
    state.jobs = [];
    void loadJobs(false);
  });
  let searchDelay = 0;
  element<HTMLInputElement>('search').addEventListener('input', (event) => {
    window.clearTimeout(searchDelay);
    searchDelay = window.setTimeout(() => {
      state.query = (event.target as HTMLInputElement).value.trim();
      state.jobs = [];
      void loadJobs(false);
    }, 250);
  });
  element('load-more').addEventListener('click', () => loadJobs(true));
  element('back').addEventListener('click', (event) => {
    event.preventDefault();
    window.location.hash = '';
  });
  window.addEventListener('hashchange', route);
  route();
}

start();
