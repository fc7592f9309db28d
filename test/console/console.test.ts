import { mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { type RuntimeProcess, startRuntimeProcess } from '#test/helpers/runtime-process';
import { findSample, samplePath } from '#test/helpers/samples';

/** Debian's Chromium, which .ci/run installs; playwright-core never downloads a browser. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Set to a folder to write the README's screenshots there. */
const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS;
const API_KEY = 'console-key-0123456789abcdef';
const ACTIVE_JOB_TIMEOUT_MS = 120_000;

let runtime: RuntimeProcess;
let browser: Browser;
const contexts: BrowserContext[] = [];
/** Every address any page asked for: the console must ask nothing but its own origin. */
const requested: string[] = [];
const ids: Record<'stereo' | 'mono', string> = { stereo: '', mono: '' };

beforeAll(async () => {
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
});

afterAll(async () => {
  for (const context of contexts) await context.close();
  await browser?.close();
  await runtime?.stop();
});

async function openConsole(viewport = { width: 1280, height: 900 }): Promise<Page> {
  const context = await browser.newContext({ acceptDownloads: true, viewport });
  contexts.push(context);
  const page = await context.newPage();
  // Transcription and the browser share two cores here: waits are generous.
  page.setDefaultTimeout(60_000);
  page.on('request', (request) => requested.push(request.url()));
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
    if (SCREENSHOTS) {
      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: join(SCREENSHOTS, 'console-list.png') });
    }

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
    await waitForRows(page, [ids.mono, ids.stereo]);
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
  });

  it('works from the keyboard, forgets the key on request, and fits a phone screen', async () => {
    const page = await openConsole({ width: 375, height: 740 });
    await page.getByLabel('API key').focus();
    await page.keyboard.type(API_KEY);
    await page.keyboard.press('Enter');
    await row(page, ids.stereo).waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);

    await row(page, ids.stereo).getByRole('link').focus();
    await page.keyboard.press('Enter');
    await page.locator('.turn').first().waitFor();

    await page.getByRole('button', { name: 'Forget key' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it('shows how the webhook of a job went', async () => {
    const mono = findSample((sample) => sample.kind === 'utterance' && (sample.duration_s ?? 0) > 5);
    // Even the local runtime, which delivers to private addresses, refuses the unspecified one, and says so.
    const submitted = await runtime.submit(await readFile(samplePath(mono)), {
      webhook_url: 'https://0.0.0.0/hook',
    });
    const page = await openConsole();
    await enterKey(page, API_KEY);
    await row(page, submitted.body.id ?? '')
      .getByRole('link')
      .click();
    const webhook = page.locator('.facts dd', { hasText: /^failed \(1 attempt\)/ });
    await webhook.waitFor({ timeout: ACTIVE_JOB_TIMEOUT_MS });
    expect(await webhook.textContent()).toMatch(/0\.0\.0\.0 is not an address the service may reach/);
  });

  it('renders the API reference from the OpenAPI document, with no other origin and no CSP violation', async () => {
    const context = await browser.newContext();
    contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(60_000);
    page.on('request', (request) => requested.push(request.url()));
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
    });
    await page.goto(`${runtime.baseUrl}/reference`);
    await page.getByText('Submit a file').first().waitFor();
    for (const path of ['/v1-beta/transcript', '/v1-beta/transcript/status', '/v1-beta/transcripts']) {
      expect(await page.getByText(path, { exact: true }).count(), path).toBeGreaterThan(0);
    }
    expect(await page.getByText('DELETE', { exact: true }).count()).toBeGreaterThan(0);
    expect(violations).toEqual([]);
  });

  it('asks nothing of any other origin', () => {
    expect(requested.length).toBeGreaterThan(10);
    const foreign = requested.filter((url) => !url.startsWith(runtime.baseUrl) && !/^(blob|data):/.test(url));
    expect(foreign).toEqual([]);
  });
});
