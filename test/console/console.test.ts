import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { MAX_DIRECT_UPLOAD_BYTES } from '#commons/contract';
import type { StatusRecord } from '#core/job';
import { type RuntimeProcess, startRuntimeProcess } from '#test/helpers/runtime-process';
import { findSample, type Sample, samplePath } from '#test/helpers/samples';

/** Debian's Chromium, which .ci/run installs; playwright-core never downloads a browser. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Set to a folder to write the README's screenshots there. */
const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS;
const API_KEY = 'console-key-0123456789abcdef';
const ACTIVE_JOB_TIMEOUT_MS = 120_000;
/** axe-core, run inside the pages for the WCAG 2.1 A and AA rules (labels, contrast, ARIA, …). */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let runtime: RuntimeProcess;
let browser: Browser;
const contexts: BrowserContext[] = [];
/** Every request any page made: the console may ask its own origin and the media bucket's, nothing else. */
const requested: { method: string; url: string }[] = [];
/** What the browser refused under the pages' content security policies: nothing may be. */
const violations: string[] = [];
const ids: Record<'stereo' | 'mono' | 'conversation', string> = { stereo: '', mono: '', conversation: '' };

/** A two-speaker conversation, and a copy of it over the direct-upload limit (the same speech, more bytes). */
const conversation = findSample(
  (sample) =>
    sample.kind === 'conversation' && new Set(speakersOf(sample)).size > 1 && (sample.duration_s ?? 0) < 30,
);
let largeConversation = '';

function speakersOf(sample: Sample): string[] {
  return ((sample as Sample & { speakers?: { speaker: string }[] }).speakers ?? []).map(
    (turn) => turn.speaker,
  );
}

beforeAll(async () => {
  if (SCREENSHOTS) mkdirSync(SCREENSHOTS, { recursive: true });
  runtime = await startRuntimeProcess(API_KEY);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const stereo = findSample((sample) => sample.kind === 'stereo' && (sample.duration_s ?? 0) > 10);
  const mono = findSample((sample) => sample.kind === 'utterance' && (sample.duration_s ?? 0) > 5);
  // One after the other, so that the second is the newer.
  const first = await runtime.submit(await readFile(samplePath(stereo)), {
    dual_channel: 'true',
    custom: 'support call 42',
  });
  const second = await runtime.submit(await readFile(samplePath(mono)), {
    custom: 'Dictation memo',
    tldr: 'true',
  });
  ids.stereo = first.body.id ?? '';
  ids.mono = second.body.id ?? '';
  // 96 kHz stereo: over the direct-upload limit, so that the page sends it by presigned upload.
  largeConversation = join(mkdtempSync(join(tmpdir(), 'console-')), 'conversation-96k.wav');
  await promisify(execFile)('ffmpeg', [
    '-v',
    'error',
    '-i',
    samplePath(conversation),
    '-ar',
    '96000',
    '-ac',
    '2',
    '-c:a',
    'pcm_s16le',
    largeConversation,
  ]);
  expect(statSync(largeConversation).size).toBeGreaterThan(MAX_DIRECT_UPLOAD_BYTES);
});

afterAll(async () => {
  for (const context of contexts) await context.close();
  await browser?.close();
  await runtime?.stop();
});

async function openConsole(
  viewport = { width: 1280, height: 900 },
  reducedMotion: 'reduce' | 'no-preference' = 'no-preference',
): Promise<Page> {
  const context = await browser.newContext({ acceptDownloads: true, viewport, reducedMotion });
  contexts.push(context);
  const page = await context.newPage();
  // Transcription and the browser share two cores here: waits are generous.
  page.setDefaultTimeout(60_000);
  watch(page);
  onTestFailed(async () => {
    console.error(
      `Console page at failure (${page.url()}):\n${await page.locator('main').innerText().catch(String)}`,
    );
  });
  await page.goto(`${runtime.baseUrl}/console`);
  return page;
}

async function enterKey(page: Page, key: string): Promise<void> {
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Open console' }).click();
}

function watch(page: Page): void {
  page.on('request', (request) => requested.push({ method: request.method(), url: request.url() }));
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
  });
}

/** The WCAG 2.1 A and AA violations axe-core finds in the page as it is. */
async function accessibilityViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const results = await page.evaluate(() =>
    (
      window as unknown as {
        axe: {
          run(
            context: Document,
            options: object,
          ): Promise<{ violations: { id: string; nodes: { target: string[] }[] }[] }>;
        };
      }
    ).axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }),
  );
  return results.violations.map(
    (violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
  );
}

async function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

/**
 * Where `action` seeks the audio to, in seconds, read at the player's own `seeking` event: while it seeks
 * the position stands still, where by `seeked` a seek that also plays (Enter on a word) has moved on by
 * however long the machine took.
 */
async function seekedTo(page: Page, action: () => Promise<void>): Promise<number> {
  await page.evaluate(() => {
    const audio = document.querySelector('audio') as HTMLAudioElement;
    (window as unknown as { nextSeek: Promise<number> }).nextSeek = new Promise((resolve) =>
      audio.addEventListener('seeking', () => resolve(audio.currentTime), { once: true }),
    );
  });
  await action();
  return page.evaluate(() => (window as unknown as { nextSeek: Promise<number> }).nextSeek);
}

/** Waits until the player knows its recording's length (it has read the audio's header through its URL). */
async function audioLoaded(page: Page): Promise<void> {
  await page
    .locator('audio')
    .evaluate((audio: HTMLAudioElement) =>
      audio.readyState >= 1
        ? undefined
        : new Promise((resolve) => audio.addEventListener('loadedmetadata', resolve, { once: true })),
    );
}

async function currentWord(page: Page): Promise<number> {
  return page.evaluate(() =>
    Number((document.querySelector('.word.current') as HTMLElement | null)?.dataset.index ?? -1),
  );
}

async function statusOf(id: string, key = API_KEY): Promise<{ status: number; body: StatusRecord }> {
  const response = await fetch(runtime.url('/v1-beta/transcript/status', { id }, key));
  return { status: response.status, body: (await response.json()) as StatusRecord };
}

function row(page: Page, id: string) {
  return page.locator('#jobs tr', { hasText: id });
}

/** Waits until the list shows exactly these jobs, in this order. */
async function waitForRows(page: Page, expected: string[]): Promise<void> {
  await page.waitForFunction(
    (wanted) =>
      JSON.stringify([...document.querySelectorAll('#jobs .job-id')].map((cell) => cell.textContent)) ===
      wanted,
    JSON.stringify(expected),
  );
}

describe('web console', () => {
  it('shows a clear message for a key that is not valid', async () => {
    const page = await openConsole();
    await enterKey(page, 'not-a-valid-key-0000');
    const error = page.locator('#key-error');
    await error.filter({ hasText: 'not accepted' }).waitFor();
    expect(await error.textContent()).toMatch(/The API key was not accepted: The API key is not valid/);
    expect(await page.getByLabel('API key').isVisible()).toBe(true);
  });

  it('sends a large file by presigned upload with progress, lands on the job as it completes, and plays it beside its words and speakers', async () => {
    const page = await openConsole();
    await enterKey(page, API_KEY);
    await page.getByRole('link', { name: 'Send a file' }).click();
    // The API's defaults.
    expect(await page.getByLabel(/^Punctuation and capitals/).isChecked()).toBe(true);
    expect(await page.getByLabel(/^Tell speakers apart/).isChecked()).toBe(false);
    expect(await page.getByLabel(/^Speakers expected/).isDisabled()).toBe(true);
    expect(await page.getByLabel(/^Language/).inputValue()).toBe('enUs');
    await page.getByLabel('Audio or video file').setInputFiles(largeConversation);
    await page.getByLabel(/^Tell speakers apart/).check();
    await page.getByLabel(/^Speakers expected/).fill(String(new Set(speakersOf(conversation)).size));
    await page.getByLabel(/^Custom/).fill('presigned conversation');
    if (SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, 'console-upload.png'), fullPage: true });

    // Every progress report the page shows, as it shows it.
    await page.evaluate(() => {
      const reports: string[] = [];
      (window as unknown as { reports: string[] }).reports = reports;
      const status = document.getElementById('upload-status') as HTMLElement;
      new MutationObserver(() => reports.push(status.textContent ?? '')).observe(status, {
        childList: true,
        characterData: true,
        subtree: true,
      });
    });
    await page.getByRole('button', { name: 'Upload and transcribe' }).click();
    await page.waitForURL(/#job=/);
    ids.conversation = decodeURIComponent(/#job=(.+)$/.exec(page.url())?.[1] ?? '');
    const reports = await page.evaluate(() => (window as unknown as { reports: string[] }).reports);
    expect(
      reports.some((report) => /^Uploading by presigned upload: 100% /.test(report)),
      reports.join('\n'),
    ).toBe(true);
    expect(reports.at(-1)).toMatch(/^Uploaded 7\.\d MB by presigned upload: job \S+ is queued\.$/);
    const put = requested.find((request) => request.method === 'PUT');
    expect(new URL(put?.url ?? 'http://none').origin).toBe(new URL(runtime.endpoints.s3).origin);

    // The job view follows the job to completed, then shows the player and the timeline.
    await page.locator('#detail-summary .status-completed').waitFor({ timeout: ACTIVE_JOB_TIMEOUT_MS });
    await page.locator('.timeline .lane').first().waitFor();
    const { body: record } = await statusOf(ids.conversation);
    const result = record.results?.results;
    if (!result?.utterances) throw new Error('The conversation has no turns.');
    expect(record.custom).toBe('presigned conversation');
    const speakers = new Set(result.words.map((word) => word.speaker));
    expect(speakers.size).toBe(new Set(speakersOf(conversation)).size);
    expect(await page.locator('.timeline .lane').count()).toBe(speakers.size);
    expect(await page.locator('.timeline .lane-name').allTextContents()).toEqual([...speakers]);
    const shares = (await page.locator('.timeline .share').allTextContents()).map((text) =>
      Number(/(\d+)%$/.exec(text)?.[1]),
    );
    expect(shares.reduce((sum, share) => sum + share, 0)).toBe(100);
    expect(await page.locator('.timeline rect.bar').count()).toBe(result.utterances.length);
    const words = page.locator('.word');
    expect(await words.count()).toBe(result.words.length);

    // Play (K) at double speed: the highlighted word advances.
    await page.getByLabel('Speed').selectOption('2');
    await audioLoaded(page);
    await page.keyboard.press('k');
    await page.getByRole('button', { name: 'Pause', exact: true }).waitFor();
    await page.waitForFunction(
      () => Number((document.querySelector('.word.current') as HTMLElement | null)?.dataset.index ?? -1) >= 0,
    );
    const early = await currentWord(page);
    await page.waitForFunction(
      (index) =>
        Number((document.querySelector('.word.current') as HTMLElement | null)?.dataset.index ?? -1) >
        index + 2,
      early,
    );
    await page.keyboard.press('k');
    await page.getByRole('button', { name: 'Play', exact: true }).waitFor();

    // A word plays from its start; J and L skip by turn; a bar of the timeline plays its turn.
    const second = result.utterances[1];
    if (!second) throw new Error('One turn only.');
    const target = result.words.findIndex((word) => word.startTime > second.startTime);
    const clicked = await seekedTo(page, () => words.nth(target).click());
    expect(clicked).toBeCloseTo((result.words[target]?.startTime ?? 0) / 1000, 1);
    expect(await currentWord(page)).toBe(target);
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    const turnStarts = result.utterances.map((turn) => turn.startTime / 1000);
    const nextTurn = turnStarts.find((start) => start > clicked) ?? 0;
    expect(await seekedTo(page, () => page.keyboard.press('l'))).toBeCloseTo(nextTurn, 1);
    expect(await seekedTo(page, () => page.keyboard.press('j'))).toBeCloseTo(second.startTime / 1000, 1);
    const bar = page.locator('.timeline .lane').nth(1).locator('rect.bar').last();
    const turnOfBar = result.utterances[Number(await bar.getAttribute('data-turn'))];
    expect(await seekedTo(page, () => bar.click())).toBeCloseTo((turnOfBar?.startTime ?? 0) / 1000, 1);
    await page.getByRole('button', { name: 'Pause', exact: true }).click();

    expect(await accessibilityViolations(page)).toEqual([]);
    if (SCREENSHOTS) {
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: join(SCREENSHOTS, 'console-player.png'), fullPage: true });
    }
    await page.getByRole('link', { name: 'Send a file' }).click();
    expect(await accessibilityViolations(page)).toEqual([]);
  });

  it('lists the jobs, follows them to completed, and shows a transcript with speakers and word times', async () => {
    const page = await openConsole();
    await enterKey(page, API_KEY);
    await row(page, ids.stereo).waitFor();
    await row(page, ids.mono).waitFor();
    // Newest first.
    const order = await page.locator('#jobs tr .job-id').allTextContents();
    expect(order.indexOf(ids.mono)).toBeLessThan(order.indexOf(ids.stereo));
    expect(await row(page, ids.stereo).textContent()).toContain('support call 42');
    expect(await row(page, ids.stereo).textContent()).toContain('dual channel');

    // The list refreshes itself while jobs are queued or processing.
    for (const id of [ids.stereo, ids.mono]) {
      await row(page, id).locator('.status-completed').waitFor({ timeout: ACTIVE_JOB_TIMEOUT_MS });
    }
    expect(await row(page, ids.stereo).locator('td').last().textContent()).toMatch(/^\d+:\d\d$/);
    if (SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, 'console-list.png') });
    expect(await accessibilityViolations(page)).toEqual([]);

    await row(page, ids.stereo).getByRole('link').click();
    await page.locator('.turn').first().waitFor();
    const speakers = await page.locator('.turn .speaker').allTextContents();
    expect(new Set(speakers)).toEqual(new Set(['S1 · channel 1', 'S2 · channel 2']));
    expect(await page.locator('.word').count()).toBeGreaterThan(10);
    expect(await page.locator('.word').first().getAttribute('title')).toMatch(/^\d+\.\d\d s – \d+\.\d\d s$/);
    if (SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, 'console-detail.png'), fullPage: true });

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'SRT' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`${ids.stereo}.srt`);
    const srt = await readFile((await download.path()) ?? '', 'utf8');
    expect(srt).toMatch(/^1\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\nS\d: /);

    await page.getByRole('link', { name: '← All jobs' }).click();
    await row(page, ids.mono).getByRole('link').click();
    await page.getByRole('heading', { name: 'TL;DR' }).waitFor();
    expect(page.url()).not.toContain(API_KEY);
  });

  it('filters by status and searches the custom value and the id', async () => {
    const page = await openConsole();
    await enterKey(page, API_KEY);
    await row(page, ids.mono).waitFor();
    await page.getByLabel('Search id or custom').fill('SUPPORT CALL');
    await waitForRows(page, [ids.stereo]);
    await page.getByLabel('Search id or custom').fill(ids.mono.slice(0, 8));
    await waitForRows(page, [ids.mono]);
    await page.getByLabel('Search id or custom').fill('');
    await waitForRows(page, [ids.conversation, ids.mono, ids.stereo]);
    await page.getByLabel('Status').selectOption('error');
    await waitForRows(page, []);
    expect(await page.locator('#list-status').textContent()).toBe('No jobs match.');
  });

  it("shows another tenant's key none of these jobs", async () => {
    const created = await runtime.keys('create', '--tenant', 'someone-else');
    const otherKey = created.trim().split('\n').at(-1) ?? '';
    expect(otherKey).toMatch(/^tsk_/);
    const page = await openConsole();
    await enterKey(page, otherKey);
    await page.locator('#list-status', { hasText: 'No jobs match.' }).waitFor();
    expect(await page.locator('#jobs tr').count()).toBe(0);
    // Nor the job, nor its audio, at their addresses.
    await page.goto(`${runtime.baseUrl}/console#job=${ids.conversation}`);
    await page.locator('#detail-summary', { hasText: `There is no job ${ids.conversation}` }).waitFor();
    expect(await page.locator('audio').count()).toBe(0);
    const audio = await fetch(runtime.url('/v1-beta/transcript/audio', { id: ids.conversation }, otherKey));
    expect(audio.status).toBe(404);
    expect((await statusOf(ids.conversation, otherKey)).status).toBe(404);
  });

  it('fits a phone screen, works from the keyboard, jumps rather than glides with reduced motion, and forgets the key', async () => {
    const page = await openConsole({ width: 390, height: 844 }, 'reduce');
    await page.getByLabel('API key').focus();
    await page.keyboard.type(API_KEY);
    await page.keyboard.press('Enter');
    await row(page, ids.conversation).waitFor();
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await page.getByRole('link', { name: 'Send a file' }).click();
    await page.getByLabel('Audio or video file').waitFor();
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);

    // The list is drawn again when it reloads (and every few seconds while jobs run): held until a row's
    // link has the focus, the reload must leave the focus on that job's link.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const isList = (url: URL) => url.pathname.endsWith('/v1-beta/transcripts');
    await page.route(isList, async (route) => {
      await held;
      await route.continue();
    });
    const reloaded = page.waitForResponse((response) => isList(new URL(response.url())));
    await page.getByRole('link', { name: 'Jobs' }).click();
    await row(page, ids.conversation).getByRole('link').focus();
    await page.evaluate(() => {
      for (const link of document.querySelectorAll<HTMLElement>('#jobs a')) link.dataset.drawnBefore = '';
    });
    release();
    await reloaded;
    await page.unroute(isList);
    await page.waitForFunction(
      (id) =>
        !document.querySelector('#jobs a[data-drawn-before]') && document.activeElement?.textContent === id,
      ids.conversation,
    );
    await page.keyboard.press('Enter');
    await page.locator('.timeline .lane').first().waitFor();
    await audioLoaded(page);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);

    // Words: one tab stop, arrow keys between them, Enter plays from one.
    const { body: record } = await statusOf(ids.conversation);
    const words = record.results?.results.words ?? [];
    await page.locator('.word').first().focus();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    expect(await page.evaluate(() => (document.activeElement as HTMLElement).dataset.index)).toBe('2');
    expect(await page.locator('.word[tabindex="0"]').count()).toBe(1);
    expect(await seekedTo(page, () => page.keyboard.press('Enter'))).toBeCloseTo(
      (words[2]?.startTime ?? 0) / 1000,
      1,
    );
    await page.keyboard.press('k');
    await page.getByRole('button', { name: 'Play', exact: true }).waitFor();

    // Following along: the last turn's first word, far below, is in view the moment it is highlighted.
    await page.evaluate(() => window.scrollTo(0, 0));
    const last = page.locator('.timeline rect.bar[data-turn]');
    const lastTurn = Math.max(
      ...(await last.evaluateAll((bars) => bars.map((bar) => Number(bar.getAttribute('data-turn'))))),
    );
    const inView = await page.evaluate((turn) => {
      const bar = document.querySelector(`.timeline rect.bar[data-turn="${turn}"]`) as SVGElement;
      const before = window.scrollY;
      return new Promise<{ moved: boolean; visible: boolean }>((resolve) => {
        const observer = new MutationObserver(() => {
          const word = document.querySelector('.word.current');
          if (!word) return;
          observer.disconnect();
          const box = word.getBoundingClientRect();
          resolve({
            moved: window.scrollY !== before,
            visible: box.top >= 0 && box.bottom <= window.innerHeight,
          });
        });
        observer.observe(document.querySelector('.words') as Element, {
          attributes: true,
          subtree: true,
          attributeFilter: ['class'],
        });
        bar.dispatchEvent(new MouseEvent('click', { bubbles: true }));
      });
    }, lastTurn);
    expect(inView).toEqual({ moved: true, visible: true });
    await page.keyboard.press('k');
    await page.getByRole('button', { name: 'Play', exact: true }).waitFor();

    await page.getByRole('button', { name: 'Forget key' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it('sends a dropped file with the form, shows how its webhook went, and deletes the job after asking', async () => {
    // A short one: only its webhook and its deletion matter here.
    const memo = findSample(
      (sample) => sample.kind === 'utterance' && (sample.duration_s ?? 0) > 2 && (sample.duration_s ?? 0) < 4,
    );
    const page = await openConsole();
    await enterKey(page, API_KEY);
    await page.getByRole('link', { name: 'Send a file' }).click();
    const dropped = await page.evaluateHandle(
      (base64) => {
        const transfer = new DataTransfer();
        const bytes = Uint8Array.from(atob(base64), (character) => character.charCodeAt(0));
        transfer.items.add(new File([bytes], 'memo.wav', { type: 'audio/wav' }));
        return transfer;
      },
      (await readFile(samplePath(memo))).toString('base64'),
    );
    await page.dispatchEvent('#drop-zone', 'drop', { dataTransfer: dropped });
    await page.locator('#file-chosen', { hasText: 'memo.wav' }).waitFor();
    // Even the local runtime, which delivers to private addresses, refuses the unspecified one, and says so.
    await page.getByLabel(/^Webhook URL/).fill('https://0.0.0.0/hook');
    await page.getByRole('button', { name: 'Upload and transcribe' }).click();
    await page.waitForURL(/#job=/);
    const id = decodeURIComponent(/#job=(.+)$/.exec(page.url())?.[1] ?? '');
    expect(await page.locator('#upload-status').textContent()).toMatch(
      / with the form: job \S+ is queued\.$/,
    );
    const webhook = page.locator('.facts dd', { hasText: /^failed \(1 attempt\)/ });
    await webhook.waitFor({ timeout: ACTIVE_JOB_TIMEOUT_MS });
    expect(await webhook.textContent()).toMatch(/0\.0\.0\.0 is not an address the service may reach/);

    // Asked first: keeping it changes nothing.
    await page.getByRole('button', { name: 'Delete job…' }).click();
    const dialog = page.getByRole('dialog', { name: `Delete job ${id}?` });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Keep it', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await statusOf(id)).status).toBe(200);
    await page.getByRole('button', { name: 'Delete job…' }).click();
    await dialog.getByRole('button', { name: 'Delete job', exact: true }).click();
    await page.locator('#list-notice', { hasText: `Job ${id} was deleted.` }).waitFor();
    await row(page, ids.mono).waitFor();
    expect(await row(page, id).count()).toBe(0);
    expect((await statusOf(id)).status).toBe(404);
    expect((await fetch(runtime.url('/v1-beta/transcript/audio', { id }))).status).toBe(404);
  });

  it('renders the API reference from the OpenAPI document, with no other origin and no CSP violation', async () => {
    const context = await browser.newContext();
    contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(60_000);
    watch(page);
    await page.goto(`${runtime.baseUrl}/reference`);
    await page.getByText('Submit a file').first().waitFor();
    for (const path of ['/v1-beta/transcript', '/v1-beta/transcript/status', '/v1-beta/transcripts']) {
      expect(await page.getByText(path, { exact: true }).count(), path).toBeGreaterThan(0);
    }
    expect(await page.getByText('DELETE', { exact: true }).count()).toBeGreaterThan(0);
  });

  it("asks nothing of any origin but its own and the media bucket's, which its policy names, and breaks no policy", async () => {
    const bucket = new URL(runtime.endpoints.s3).origin;
    const origins = new Set(
      requested.filter(({ url }) => !/^(blob|data):/.test(url)).map(({ url }) => new URL(url).origin),
    );
    expect(origins).toEqual(new Set([new URL(runtime.baseUrl).origin, bucket]));
    // The bucket was asked for both: the upload's PUT and the player's GETs.
    const toBucket = requested.filter(({ url }) => url.startsWith(bucket));
    expect(new Set(toBucket.map(({ method }) => method))).toEqual(new Set(['PUT', 'GET']));
    const policy = (await fetch(`${runtime.baseUrl}/console`)).headers.get('content-security-policy') ?? '';
    expect(policy).toContain(`connect-src 'self' ${bucket};`);
    expect(policy).toContain(`media-src 'self' ${bucket};`);
    expect(policy).toMatch(/^default-src 'none';/);
    expect(violations).toEqual([]);
  });
});
