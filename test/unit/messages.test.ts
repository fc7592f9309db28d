import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  decodeWorkerMessage,
  encodeCheckMessage,
  encodeJobMessage,
  engineJobName,
  jobIdOfMessage,
} from '#core/messages';

describe('worker messages', () => {
  it('reads start and check messages back', () => {
    expect(decodeWorkerMessage(encodeJobMessage('j1'))).toEqual({ kind: 'process', jobId: 'j1' });
    expect(decodeWorkerMessage(encodeCheckMessage('j1', 3))).toEqual({
      kind: 'check',
      jobId: 'j1',
      attempt: 3,
    });
  });

  it('reads the Transcribe state change event and finds our job by the deployment prefix', () => {
    const event = JSON.parse(
      readFileSync(new URL('../fixtures/transcribe/job-state-change-event.json', import.meta.url), 'utf8'),
    );
    event.detail.TranscriptionJobName = engineJobName('Stack-', 'abc');
    const message = decodeWorkerMessage(JSON.stringify(event));
    expect(message).toEqual({ kind: 'engine-event', engineJobName: 'Stack-abc', status: 'COMPLETED' });
    expect(jobIdOfMessage(message, 'Stack-')).toBe('abc');
    expect(jobIdOfMessage(message, 'Other-')).toBeUndefined();
    expect(jobIdOfMessage(message, '')).toBeUndefined();
  });

  it('refuses anything else', () => {
    for (const body of ['{}', '{"jobId":""}', '{"source":"aws.s3"}', 'not json']) {
      expect(() => decodeWorkerMessage(body)).toThrow();
    }
  });
});
