/**
 * Sending a file from the console: the API's options with the API's defaults (the page renders them),
 * the file inside the form or, over the direct-upload limit, by presigned upload straight to the
 * bucket (the same choice and form parts as the typed client's), with its progress; then the new job.
 */
import { type JobOptions, optionsForm, uploadVia } from '#client/submission';
import type { SubmissionRecord } from '#core/job';
import type { UploadTicket } from '#core/upload';
import { ApiFailure, apiUrl, requestJson, sendWithProgress } from './api.ts';
import { element, formatBytes } from './dom.ts';

const IDEMPOTENCY_HEADER = 'Idempotency-Key';
/** Headers a page may not set: the browser sends the body's length itself. */
const BROWSER_SET_HEADERS = new Set(['content-length', 'host']);

interface Progress {
  via: 'direct' | 'presigned';
  sent: number;
  total: number;
}

/** The form's options as the API takes them; flags always sent, empty fields never. */
function readOptions(form: HTMLFormElement): JobOptions {
  const control = (name: keyof JobOptions) => form.elements.namedItem(name) as HTMLInputElement;
  const text = (name: keyof JobOptions) => control(name).value.trim();
  const options: JobOptions = {
    dual_channel: control('dual_channel').checked,
    punctuate: control('punctuate').checked,
    speaker_diarization: control('speaker_diarization').checked,
    tldr: control('tldr').checked,
    short_hand_notes: control('short_hand_notes').checked,
    language: text('language'),
  };
  if (text('webhook_url')) options.webhook_url = text('webhook_url');
  if (control('custom').value) options.custom = control('custom').value;
  // Numbers go as typed: the API names the field when one is not a whole number in range.
  if (options.speaker_diarization && text('speakers_expected'))
    options.speakers_expected = Number(text('speakers_expected'));
  if (text('retention_days')) options.retention_days = Number(text('retention_days'));
  return options;
}

async function submitFile(
  file: File,
  options: JobOptions,
  settings: {
    maxDirectUploadBytes: number;
    idempotencyKey: string;
    /** A file this submission already uploaded (an earlier press whose submission failed). */
    uploadedRef?: string;
  },
  onProgress: (progress: Progress) => void,
  onUploaded: (audioRef: string) => void,
): Promise<SubmissionRecord> {
  const idempotency = { [IDEMPOTENCY_HEADER]: settings.idempotencyKey };
  if (uploadVia(file.size, settings.maxDirectUploadBytes) === 'direct') {
    const form = optionsForm(options);
    form.append('audio', file, file.name);
    const answer = await sendWithProgress(
      'POST',
      apiUrl('v1-beta/transcript'),
      form,
      idempotency,
      // The body is the form: its share sent, in the file's bytes.
      (sent, total) =>
        onProgress({ via: 'direct', sent: Math.round((sent / total) * file.size), total: file.size }),
    );
    return JSON.parse(answer) as SubmissionRecord;
  }
  // Never PUT again a file already uploaded for this submission: it may be a job's audio by now, and a
  // new PUT would tag it pending again (the bucket expires pending uploads after a day).
  const audioRef = settings.uploadedRef ?? (await uploadFile(file, idempotency, onProgress));
  onUploaded(audioRef);
  const form = optionsForm(options);
  form.append('audio_ref', audioRef);
  return requestJson<SubmissionRecord>(
    'v1-beta/transcript',
    {},
    { method: 'POST', body: form, headers: idempotency },
  );
}

/** A presigned upload of the file (the same key names the ticket and the submission); its reference. */
async function uploadFile(
  file: File,
  idempotency: Record<string, string>,
  onProgress: (progress: Progress) => void,
): Promise<string> {
  const ticket = await requestJson<UploadTicket>(
    'v1-beta/upload',
    {},
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...idempotency },
      body: JSON.stringify({ size: file.size, ...(file.type ? { content_type: file.type } : {}) }),
    },
  );
  const headers = Object.fromEntries(
    Object.entries(ticket.headers).filter(([name]) => !BROWSER_SET_HEADERS.has(name.toLowerCase())),
  );
  onProgress({ via: 'presigned', sent: 0, total: file.size });
  await sendWithProgress(ticket.method, ticket.upload_url, file, headers, (sent, total) =>
    onProgress({ via: 'presigned', sent, total }),
  );
  return ticket.audio_ref;
}

function describeProgress({ via, sent, total }: Progress): string {
  const how = via === 'direct' ? 'with the form' : 'by presigned upload';
  const percent = total > 0 ? Math.floor((sent / total) * 100) : 100;
  return `Uploading ${how}: ${percent}% (${formatBytes(sent)} of ${formatBytes(total)})`;
}

/**
 * Wires the form: choosing or dropping a file, the speakers hint only with speakers told apart, and
 * sending. `onSubmitted` gets the new job; a refused key goes to `onRefused`.
 */
export function setUpNewJobForm(
  onSubmitted: (job: SubmissionRecord) => void,
  onRefused: (failure: ApiFailure) => void,
): void {
  const form = element<HTMLFormElement>('new-form');
  const input = element<HTMLInputElement>('audio-file');
  const zone = element('drop-zone');
  const chosen = element('file-chosen');
  const progress = element<HTMLProgressElement>('upload-progress');
  const status = element('upload-status');
  const error = element('new-error');
  const send = element<HTMLButtonElement>('send');
  const diarization = form.elements.namedItem('speaker_diarization') as HTMLInputElement;
  const speakers = form.elements.namedItem('speakers_expected') as HTMLInputElement;
  const maxDirectUploadBytes = Number(form.dataset.maxDirectUploadBytes);
  const maxUploadBytes = Number(form.dataset.maxUploadBytes);
  // One key per submission as filled in: pressing again after a failure cannot make a second job.
  let idempotencyKey = crypto.randomUUID();
  let uploadedRef: string | undefined;

  const showChosen = () => {
    const file = input.files?.[0];
    chosen.textContent = file ? `${file.name} — ${formatBytes(file.size)}` : '';
  };
  const changed = () => {
    idempotencyKey = crypto.randomUUID();
    uploadedRef = undefined;
    speakers.disabled = !diarization.checked;
    error.textContent = '';
  };
  form.addEventListener('input', changed);
  form.addEventListener('change', changed);
  input.addEventListener('change', showChosen);
  for (const type of ['dragenter', 'dragover']) {
    zone.addEventListener(type, (event) => {
      event.preventDefault();
      zone.classList.add('dragging');
    });
  }
  zone.addEventListener('dragleave', () => zone.classList.remove('dragging'));
  zone.addEventListener('drop', (event) => {
    event.preventDefault();
    zone.classList.remove('dragging');
    const files = (event as DragEvent).dataTransfer?.files;
    if (!files?.length) return;
    input.files = files;
    changed();
    showChosen();
  });

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const file = input.files?.[0];
    error.textContent = '';
    for (const invalid of form.querySelectorAll('[aria-invalid]')) invalid.removeAttribute('aria-invalid');
    if (!file) return fail('Choose a file to send.', input);
    if (file.size === 0) return fail('The file is empty.', input);
    if (file.size > maxUploadBytes)
      return fail(`Files are accepted up to ${formatBytes(maxUploadBytes)}.`, input);
    send.disabled = true;
    form.setAttribute('aria-busy', 'true');
    progress.hidden = false;
    progress.value = 0;
    try {
      const job = await submitFile(
        file,
        readOptions(form),
        { maxDirectUploadBytes, idempotencyKey, ...(uploadedRef ? { uploadedRef } : {}) },
        (report) => {
          progress.value = report.total > 0 ? report.sent / report.total : 1;
          status.textContent = describeProgress(report);
        },
        (audioRef) => {
          uploadedRef = audioRef;
        },
      );
      const how =
        uploadVia(file.size, maxDirectUploadBytes) === 'presigned' ? 'by presigned upload' : 'with the form';
      status.textContent = `Uploaded ${formatBytes(file.size)} ${how}: job ${job.id} is ${job.status}.`;
      form.reset();
      showChosen();
      changed();
      onSubmitted(job);
    } catch (failure) {
      progress.hidden = true;
      status.textContent = '';
      if (failure instanceof ApiFailure && failure.status === 401) {
        onRefused(failure);
        return;
      }
      const field = failure instanceof ApiFailure && failure.field ? failure.field : undefined;
      const control = field
        ? (form.elements.namedItem(field === 'audio_ref' ? 'audio' : field) as HTMLElement | null)
        : null;
      fail(failure instanceof Error ? `Not sent: ${failure.message}` : 'Not sent.', control ?? undefined);
    } finally {
      send.disabled = false;
      form.removeAttribute('aria-busy');
    }
  });

  function fail(message: string, control?: HTMLElement): void {
    error.textContent = message;
    if (control) {
      control.setAttribute('aria-invalid', 'true');
      control.focus();
    }
  }
}
