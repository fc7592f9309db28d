import { describe, expect, it } from 'vitest';
import { RequestError } from '#core/errors';
import { MAX_CUSTOM_LENGTH, MAX_SPEAKERS_EXPECTED, parseJobOptions } from '#core/options';

function refusal(fields: Record<string, string>, settings = {}): RequestError {
  try {
    parseJobOptions(fields, settings);
  } catch (error) {
    if (error instanceof RequestError) return error;
    throw error;
  }
  throw new Error(`accepted ${JSON.stringify(fields)}`);
}

describe('parseJobOptions', () => {
  it('applies the defaults of DESIGN 3 when no option is sent', () => {
    expect(parseJobOptions({})).toEqual({
      dual_channel: false,
      punctuate: true,
      speaker_diarization: false,
      tldr: false,
      short_hand_notes: false,
      language: 'enUs',
      webhook_url: '',
      custom: '',
    });
  });

  it('accepts true and false in any case', () => {
    const options = parseJobOptions({
      dual_channel: 'TRUE',
      punctuate: 'False',
      tldr: 'true',
      short_hand_notes: 'tRuE',
    });
    expect(options).toMatchObject({
      dual_channel: true,
      punctuate: false,
      tldr: true,
      short_hand_notes: true,
    });
  });

  it.each(['dual_channel', 'punctuate', 'speaker_diarization', 'tldr', 'short_hand_notes'])(
    'refuses a non-boolean %s with a 400 naming the field',
    (field) => {
      for (const value of ['yes', '1', '', 'truee']) {
        const error = refusal({ [field]: value });
        expect(error.code).toBe('invalid_option');
        expect(error.field).toBe(field);
        expect(error.message).toContain(field);
      }
    },
  );

  it('accepts enUs in any case and refuses other languages, listing the accepted codes', () => {
    expect(parseJobOptions({ language: 'ENUS' }).language).toBe('enUs');
    const error = refusal({ language: 'frFr' });
    expect(error).toMatchObject({ code: 'unsupported_language', field: 'language' });
    expect(error.message).toContain('enUs');
  });

  it('accepts an empty or https webhook_url and refuses anything else', () => {
    expect(parseJobOptions({ webhook_url: '' }).webhook_url).toBe('');
    expect(parseJobOptions({ webhook_url: 'https://example.com/hook' }).webhook_url).toBe(
      'https://example.com/hook',
    );
    for (const value of ['example.com/hook', 'ftp://example.com', 'http://example.com/hook', 'https://']) {
      expect(refusal({ webhook_url: value })).toMatchObject({
        code: 'invalid_option',
        field: 'webhook_url',
      });
    }
  });

  it('refuses, outside local mode, a webhook_url to localhost or a literal address that is not public', () => {
    for (const value of [
      'https://localhost/hook',
      'https://api.localhost/hook',
      'https://127.0.0.1/hook',
      'https://0x7f.1/hook',
      'https://2130706433/hook',
      'https://[::1]/hook',
      'https://[::ffff:10.0.0.1]/hook',
      'https://169.254.169.254/latest/meta-data/',
      'https://10.1.2.3/hook',
      'https://172.16.0.1/hook',
      'https://192.168.0.1/hook',
      'https://[fd00:ec2::254]/hook',
    ]) {
      expect(refusal({ webhook_url: value }), value).toMatchObject({
        code: 'invalid_option',
        field: 'webhook_url',
      });
    }
    expect(parseJobOptions({ webhook_url: 'https://93.184.215.14/hook' }).webhook_url).toBe(
      'https://93.184.215.14/hook',
    );
    // Names are checked when delivering, once resolved.
    expect(parseJobOptions({ webhook_url: 'https://hooks.example.net/x' }).webhook_url).toBe(
      'https://hooks.example.net/x',
    );
  });

  it('takes retention_days from 1 to 89, echoed only when sent', () => {
    expect(parseJobOptions({ retention_days: '1' }).retention_days).toBe(1);
    expect(parseJobOptions({ retention_days: ' 89 ' }).retention_days).toBe(89);
    expect(parseJobOptions({})).not.toHaveProperty('retention_days');
    for (const value of ['0', '90', '365', '-1', '1.5', 'seven', '', '007']) {
      expect(refusal({ retention_days: value }), value).toMatchObject({
        code: 'invalid_option',
        field: 'retention_days',
      });
    }
  });

  it('accepts http webhooks in local mode only', () => {
    expect(parseJobOptions({ webhook_url: 'http://localhost:9000/x' }, { localMode: true }).webhook_url).toBe(
      'http://localhost:9000/x',
    );
  });

  it('keeps custom up to its limit and refuses longer values', () => {
    expect(parseJobOptions({ custom: 'x'.repeat(MAX_CUSTOM_LENGTH) }).custom).toHaveLength(MAX_CUSTOM_LENGTH);
    expect(refusal({ custom: 'x'.repeat(MAX_CUSTOM_LENGTH + 1) })).toMatchObject({
      code: 'invalid_option',
      field: 'custom',
    });
  });

  it('takes speakers_expected as a whole number from 1 to 10 with speaker_diarization, absent by default', () => {
    expect(parseJobOptions({ speaker_diarization: 'true' })).not.toHaveProperty('speakers_expected');
    for (const value of ['1', ' 4 ', String(MAX_SPEAKERS_EXPECTED)]) {
      expect(
        parseJobOptions({ speaker_diarization: 'true', speakers_expected: value }).speakers_expected,
      ).toBe(Number(value));
    }
    for (const value of ['0', '11', '2.5', '-1', 'two', '', '1e1', '0x3', '9'.repeat(400)]) {
      expect(refusal({ speaker_diarization: 'true', speakers_expected: value }), value).toMatchObject({
        code: 'invalid_option',
        field: 'speakers_expected',
      });
    }
    const alone = refusal({ speakers_expected: '2' });
    expect(alone).toMatchObject({ code: 'invalid_option', field: 'speakers_expected' });
    expect(alone.message).toContain('speaker_diarization');
  });

  it('refuses unknown fields, so that a misspelt option is not silently ignored', () => {
    expect(refusal({ speaker_diarisation: 'true' })).toMatchObject({
      code: 'invalid_request',
      field: 'speaker_diarisation',
    });
  });
});
