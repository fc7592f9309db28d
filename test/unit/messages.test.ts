import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { transcribeJobName } from '#commons/contract';
import { decodeWorkerMessage, encodeCheckMessage, encodeProcessMessage } from '#core/messages';

describe('worker messages', () => {
  it('reads start and check messages back', () => {
    expect(decodeWorkerMessage(encodeProcessMessage('j1'), 'Stack-')).toEqual({
      kind: 'process',
      jobId: 'j1',
    });
    expect(decodeWorkerMessage(encodeCheckMessage('j1', 3), 'Stack-')).toEqual({
      kind: 'check',
      jobId: 'j1',
      attempt: 3,
    });
  });

  it('reads the Transcribe state change event and finds our job by the deployment prefix', () => {
    const event = JSON.parse(
      readFileSync(new URL('../fixtures/transcribe/job-state-change-event.json', import.meta.url), 'utf8'),
    );
    event.detail.TranscriptionJobName = transcribeJobName('Stack-', 'abc');
    const body = JSON.stringify(event);
    expect(decodeWorkerMessage(body, 'Stack-')).toEqual({
      kind: 'transcribe-event',
      jobId: 'abc',
      status: 'COMPLETED',
    });
    // Another deployment's job, or a deployment without Transcribe: not ours.
    expect(decodeWorkerMessage(body, 'Other-')).toBeUndefined();
    expect(decodeWorkerMessage(body, '')).toBeUndefined();
  });

  it('refuses anything else', () => {
    for (const body of ['{}', '{"jobId":""}', '{"source":"aws.s3"}', 'not json']) {
      expect(() => decodeWorkerMessage(body, 'Stack-')).toThrow();
    }
  });
});
