import { describe, expect, it } from 'vitest';
import { resultKey } from '#commons/contract';
import { newJob, toStatusRecord, toSubmissionRecord } from '#core/job';
import { parseJobOptions } from '#core/options';
import type { TranscriptResult } from '#core/result';

const now = new Date('2026-03-04T05:06:07.089Z');
const job = newJob({
  id: 'job-1',
  tenantId: 'acme',
  options: parseJobOptions({ custom: 'c1', tldr: 'true' }),
  now,
});

describe('job records', () => {
  it('starts queued, expires 90 days after submission and keeps its audio under the tenant', () => {
    expect(job.status).toBe('queued');
    expect(job.expiresAt).toBe(Math.floor(now.getTime() / 1000) + 90 * 86_400);
    expect(job.audioKey).toBe('audio/acme/job-1');
    expect(resultKey('acme', 'job-1')).toBe('results/acme/job-1.json');
  });

  it('answers a submission with SPEC 2.1 booleans as strings and a millisecond ISO timestamp', () => {
    expect(toSubmissionRecord(job)).toEqual({
      id: 'job-1',
      status: 'queued',
      dual_channel: 'false',
      punctuate: 'true',
      webhook_url: '',
      custom: 'c1',
      speaker_diarization: 'false',
      language: 'enUs',
      timestamp_submitted: '2026-03-04T05:06:07.089Z',
      tldr: 'true',
      short_hand_notes: 'false',
    });
  });

  it('gives a status record with JSON booleans and no results before completion', () => {
    const record = toStatusRecord(job);
    expect(record).toEqual({
      id: 'job-1',
      status: 'queued',
      dual_channel: false,
      punctuate: true,
      webhook_url: '',
      custom: 'c1',
      speaker_diarization: false,
      language: 'enUs',
      timestamp_submitted: '2026-03-04T05:06:07.089Z',
    });
    expect(record).not.toHaveProperty('tldr');
  });

  it('echoes speakers_expected only when it was sent: a string on submission, a number in the status', () => {
    const hinted = newJob({
      id: 'job-2',
      tenantId: 'acme',
      options: parseJobOptions({ speaker_diarization: 'true', speakers_expected: '3' }),
      now,
    });
    expect(toSubmissionRecord(hinted)).toMatchObject({ speaker_diarization: 'true', speakers_expected: '3' });
    expect(toStatusRecord(hinted)).toMatchObject({ speaker_diarization: true, speakers_expected: 3 });
    expect(toSubmissionRecord(job)).not.toHaveProperty('speakers_expected');
    expect(toStatusRecord(job)).not.toHaveProperty('speakers_expected');
  });

  it('adds results with a copy of the job data once completed, and the error once failed', () => {
    const result: TranscriptResult = {
      transcript: 'Hello.',
      words: [{ startTime: 0, endTime: 400, word: 'Hello.', confidence: 0.9 }],
      audio_duration_ms: 500,
      engine: 'sphinx',
    };
    const completed = toStatusRecord({ ...job, status: 'completed' }, result);
    expect(completed.results?.results).toEqual(result);
    expect(completed.results?.job_data).toMatchObject({ id: 'job-1', status: 'completed', punctuate: true });

    const failed = toStatusRecord({
      ...job,
      status: 'error',
      error: { code: 'no_audio', message: 'No audio.' },
    });
    expect(failed.error).toEqual({ code: 'no_audio', message: 'No audio.' });
    expect(failed).not.toHaveProperty('results');
  });
});
