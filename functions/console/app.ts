/**
 * The web console: a tenant's jobs of the last 90 days, each with its transcript to read while its
 * audio plays; sending a file; deleting a job. Runs in the browser, bundled by esbuild into the page
 * that GET /console serves. It talks only to this API and to the media bucket's presigned URLs, with
 * the key kept in sessionStorage (api.ts). Every text that comes from the API is set with textContent.
 */
import type { JobSummary, StatusRecord } from '#core/job';
import type { TranscriptResult } from '#core/result';
import { ApiFailure, apiKey, forgetKey, rememberKey, request, requestJson } from './api.ts';
import { button, element, formatDuration, make } from './dom.ts';
import { setUpNewJobForm } from './new-job.ts';
import { createPlayer, type Player } from './player.ts';

const REFRESH_MS = 3000;
const PAGE_SIZE = 25;
const ACTIVE = new Set(['queued', 'processing']);

interface JobList {
  jobs: JobSummary[];
  next_cursor: string | null;
}

const state = {
  jobs: [] as JobSummary[],
  cursor: null as string | null,
  status: '',
  query: '',
  refreshTimer: 0,
  detailTimer: 0,
  /** The job whose result is on screen, so that a refresh of its facts leaves the player playing. */
  shownResult: '',
  player: undefined as Player | undefined,
};

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

type View = 'key' | 'list' | 'new' | 'detail';

function show(view: View): void {
  for (const name of ['key', 'list', 'new', 'detail'] as const)
    element(`${name}-view`).hidden = view !== name;
  element('nav').hidden = view === 'key';
  if (view !== 'list') element('list-notice').textContent = '';
  if (view !== 'detail') closeResult();
}

function closeResult(): void {
  state.player?.destroy();
  state.player = undefined;
  state.shownResult = '';
  element('detail-result').replaceChildren();
}

function showKeyForm(message = ''): void {
  stopTimers();
  forgetKey();
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
  // A refresh while jobs run must not take the keyboard's place away: the same job's link keeps the focus,
  // without scrolling back to it should the reader have scrolled away.
  const focused = document.activeElement;
  const focusedHref =
    focused instanceof HTMLAnchorElement && element('jobs').contains(focused) ? focused.href : '';
  element('jobs').replaceChildren(...rows);
  element('load-more').hidden = !state.cursor;
  if (focusedHref)
    [...element('jobs').querySelectorAll('a')]
      .find((link) => link.href === focusedHref)
      ?.focus({ preventScroll: true });
}

async function openJob(id: string): Promise<void> {
  stopTimers();
  show('detail');
  element('detail-title').textContent = `Job ${id}`;
  const summary = element('detail-summary');
  try {
    const record = await requestJson<StatusRecord>('v1-beta/transcript/status', { id });
    renderDetail(record);
    const delivering = record.webhook_status === 'pending' || record.webhook_status === 'retrying';
    if (ACTIVE.has(record.status) || delivering || (record.webhook_url && !record.webhook_status)) {
      state.detailTimer = window.setTimeout(() => openJob(id), REFRESH_MS);
    }
  } catch (error) {
    summary.replaceChildren();
    closeResult();
    if (error instanceof ApiFailure && error.status === 404) {
      summary.textContent = `There is no job ${id} for this key: it was deleted, has expired, or belongs to another account.`;
      return;
    }
    handleFailure(error, summary);
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
  if (record.progress) {
    const bar = make('progress');
    bar.max = record.progress.chunks_total;
    bar.value = record.progress.chunks_done;
    bar.setAttribute('aria-label', 'Transcription progress');
    const { chunks_done, chunks_total } = record.progress;
    facts.push(['Progress', make('span', {}, [bar, ` ${chunks_done} of ${chunks_total} parts transcribed`])]);
  }
  const result = record.results?.results;
  if (result) facts.push(['Duration', formatDuration(result.audio_duration_ms)], ['Engine', result.engine]);
  if (record.webhook_url) facts.push(['Webhook', webhookDelivery(record)]);
  const list = make('dl', { className: 'facts' });
  for (const [term, value] of facts) list.append(make('dt', { text: term }), make('dd', {}, [value]));

  const parts: Node[] = [list, make('div', { className: 'actions' }, [deleteButton(record.id)])];
  if (record.error) {
    const failure = make('div', { className: 'job-error' }, [
      make('strong', { text: record.error.code }),
      ` ${record.error.message}`,
    ]);
    failure.setAttribute('role', 'alert');
    parts.push(failure);
  }
  if (!result && !record.error)
    parts.push(make('p', { text: 'The transcript appears here when the job is completed.' }));
  element('detail-summary').replaceChildren(...parts);
  if (result && state.shownResult !== record.id) showResult(record.id, result);
}

/** Where the job's webhook goes and how its delivery went: its state, attempts, the last answer or why none. */
function webhookDelivery(record: StatusRecord): string {
  if (!record.webhook_status) return `${record.webhook_url} — sent when the job ends`;
  const attempts = record.webhook_attempts ?? 0;
  const details = [
    `${attempts} ${attempts === 1 ? 'attempt' : 'attempts'}`,
    record.webhook_response_code !== undefined && `last answer HTTP ${record.webhook_response_code}`,
  ].filter(Boolean);
  const why = record.webhook_error ? `: ${record.webhook_error}` : '';
  return `${record.webhook_status} (${details.join(', ')})${why}`;
}

function showResult(id: string, result: TranscriptResult): void {
  closeResult();
  state.shownResult = id;
  const player = createPlayer(id, result);
  state.player = player;
  const sections: Node[] = [player.sections[0] as Node];
  const downloads = make('div', { className: 'downloads' }, [make('h3', { text: 'Download' })]);
  for (const format of ['json', 'txt', 'srt', 'vtt'] as const) {
    const download = button(format.toUpperCase(), () => downloadAs(id, format));
    download.title = `Download the transcript as ${format.toUpperCase()}`;
    downloads.append(download);
  }
  sections.push(...player.sections.slice(1, -1), downloads);
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
  sections.push(player.sections.at(-1) as Node);
  element('detail-result').replaceChildren(...sections);
}

function deleteButton(id: string): HTMLButtonElement {
  return button('Delete job…', () => confirmDeletion(id), 'danger secondary');
}

/** Asks first, in a modal dialog; a deleted job leaves the view for the list, which says so. */
function confirmDeletion(id: string): void {
  const dialog = element<HTMLDialogElement>('delete-dialog');
  element('delete-title').textContent = `Delete job ${id}?`;
  const error = element('delete-error');
  error.textContent = '';
  const confirm = element<HTMLButtonElement>('confirm-delete');
  confirm.onclick = async () => {
    confirm.disabled = true;
    try {
      await request('v1-beta/transcript', { id }, { method: 'DELETE' });
      dialog.close();
      closeResult();
      window.location.hash = '';
      element('list-notice').textContent = `Job ${id} was deleted.`;
    } catch (failure) {
      if (failure instanceof ApiFailure && failure.status === 401) {
        dialog.close();
        handleFailure(failure, error);
      } else handleFailure(failure, error);
    } finally {
      confirm.disabled = false;
    }
  };
  dialog.showModal();
}

/** Downloads through fetch, so that the key never becomes a link address kept in the history. */
async function downloadAs(id: string, format: 'json' | 'txt' | 'srt' | 'vtt'): Promise<void> {
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
    handleFailure(error, element('detail-summary'));
  }
}

function route(): void {
  if (!apiKey()) {
    showKeyForm();
    return;
  }
  const match = /^#job=(.+)$/.exec(window.location.hash);
  if (match?.[1]) {
    const id = decodeURIComponent(match[1]);
    if (state.shownResult && state.shownResult !== id) closeResult();
    void openJob(id);
    return;
  }
  stopTimers();
  if (window.location.hash === '#new') {
    show('new');
    return;
  }
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
    rememberKey(key);
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
  element('cancel-delete').addEventListener('click', () =>
    element<HTMLDialogElement>('delete-dialog').close(),
  );
  setUpNewJobForm(
    (job) => {
      window.location.hash = `#job=${encodeURIComponent(job.id)}`;
    },
    (failure) => handleFailure(failure, element('new-error')),
  );
  // A file dropped beside the drop zone must not replace the page.
  for (const type of ['dragover', 'drop']) window.addEventListener(type, (event) => event.preventDefault());
  window.addEventListener('hashchange', route);
  route();
}

start();
