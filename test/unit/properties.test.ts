import { PassThrough, Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseMultipartForm } from '#api/multipart';
import { decodeCursor, encodeCursor } from '#core/cursor';
import { RequestError } from '#core/errors';
import { OPTION_FIELDS, parseJobOptions } from '#core/options';
import { multipartBody } from '#test/helpers/events';

/**
 * Properties over the parsers that take untrusted input: whatever comes in, they answer a value or a
 * RequestError that names what is wrong, and nothing else (no other exception, no hang, no crash).
 */

const runs = { numRuns: 300 };

/** The answer of a parser: its value, or the RequestError it threw; any other error fails the property. */
function outcome<T>(parse: () => T): T | RequestError {
  try {
    return parse();
  } catch (error) {
    if (error instanceof RequestError) return error;
    throw error;
  }
}

const fieldName = fc.oneof(
  fc.constantFrom(...OPTION_FIELDS, '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'audio', ''),
  fc.string({ maxLength: 30 }),
);
const flagValue = fc.oneof(
  fc.constantFrom('true', 'false', 'TRUE', 'False', 'yes', '', ' true '),
  fc.string(),
);

describe('the option parser', () => {
  it('answers valid options or a RequestError naming a field, for any text parts', () => {
    fc.assert(
      fc.property(fc.dictionary(fieldName, flagValue, { maxKeys: 12 }), (fields) => {
        const parts = Object.assign(Object.create(null), fields) as Record<string, string>;
        const result = outcome(() => parseJobOptions(parts));
        if (result instanceof RequestError) {
          expect(['invalid_option', 'invalid_request', 'unsupported_language']).toContain(result.code);
          expect(typeof result.field).toBe('string');
          return;
        }
        for (const flag of [
          'dual_channel',
          'punctuate',
          'speaker_diarization',
          'tldr',
          'short_hand_notes',
        ] as const) {
          expect(typeof result[flag]).toBe('boolean');
        }
        expect(result.language).toBe('enUs');
        expect(Object.keys(fields).every((name) => (OPTION_FIELDS as readonly string[]).includes(name))).toBe(
          true,
        );
      }),
      runs,
    );
  });

  it('refuses a part named after an object property instead of treating it as one', () => {
    for (const name of ['__proto__', 'constructor', 'toString']) {
      const parts = Object.assign(Object.create(null), { [name]: 'x' }) as Record<string, string>;
      expect(outcome(() => parseJobOptions(parts))).toMatchObject({ code: 'invalid_request', field: name });
    }
  });
});

/** Receives a file part as storage does: streamed through a pipeline into a sink that counts. */
async function receiveFile(stream: NodeJS.ReadableStream): Promise<{ bytes: number }> {
  let bytes = 0;
  await pipeline(
    stream,
    new PassThrough(),
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        bytes += chunk.length;
        callback();
      },
    }),
  );
  return { bytes };
}

async function parseBody(body: Buffer, contentType: string) {
  return parseMultipartForm({ body: Readable.from([body]), contentType, receiveFile }).then(
    (form) => form,
    (error: unknown) => {
      if (error instanceof RequestError) return error;
      throw error;
    },
  );
}

const validForm = fc
  .record({
    fields: fc.dictionary(fieldName, fc.string({ maxLength: 40 }), { maxKeys: 6 }),
    file: fc.uint8Array({ maxLength: 2000 }),
    fileName: fc.string({ maxLength: 40 }),
  })
  .map(async ({ fields, file, fileName }) => {
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    form.append('audio', new Blob([file]), fileName || 'a.wav');
    return { ...(await multipartBody(form)), fileBytes: file.length };
  });

describe('the multipart parser', () => {
  it('receives the file of any well-formed form whole', async () => {
    await fc.assert(
      fc.asyncProperty(validForm, async (built) => {
        const { body, contentType, fileBytes } = await built;
        const form = await parseBody(body, contentType);
        if (form instanceof RequestError) throw form;
        if (!form.problem) expect(form.file?.bytes).toBe(fileBytes);
      }),
      { numRuns: 100 },
    );
  });

  it('answers a problem, never a crash or a hang, for any form cut off or corrupted anywhere', async () => {
    await fc.assert(
      fc.asyncProperty(
        validForm,
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 0, max: 255 })), {
          maxLength: 4,
        }),
        async (built, cut, flips) => {
          const { body, contentType } = await built;
          const damaged = Buffer.from(body.subarray(0, Math.floor(body.length * cut)));
          for (const [at, byte] of flips)
            if (damaged.length) damaged[Math.floor(at * (damaged.length - 1))] = byte;
          const form = await parseBody(damaged, contentType);
          if (form instanceof RequestError) {
            expect(form.code).toBe('invalid_request');
          } else if (damaged.length < body.length - 2) {
            // Cut before the closing boundary: the form is never taken as complete.
            expect(form.problem ?? (form.file ? undefined : 'no file')).toBeDefined();
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('answers a problem for arbitrary bytes under any multipart content type', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 3000 }),
        fc.oneof(
          fc.constant('multipart/form-data; boundary=X'),
          fc.string().map((text) => `multipart/form-data; ${text}`),
        ),
        async (bytes, contentType) => {
          const form = await parseBody(Buffer.from(bytes), contentType);
          if (form instanceof RequestError) expect(form.code).toBe('invalid_request');
          else
            expect(form.file === undefined || form.problem !== undefined || form.file.bytes >= 0).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });
});

const uuid = fc.uuid({ version: 4 });
const timestamp = fc
  .date({
    min: new Date('2025-01-01T00:00:00.000Z'),
    max: new Date('2030-01-01T00:00:00.000Z'),
    noInvalidDate: true,
  })
  .map((date) => date.toISOString());

describe('the list cursor', () => {
  it('reads back what it wrote, for the same tenant and window', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 64 }), uuid, timestamp, (tenantId, id, ts) => {
        const cursor = encodeCursor(tenantId, { id, timestamp_submitted: ts });
        expect(decodeCursor(cursor, tenantId, '2025-01-01T00:00:00.000Z')).toEqual({
          id,
          timestamp_submitted: ts,
        });
      }),
      runs,
    );
  });

  it("refuses another tenant's cursor, an aged one, and any text it did not write, naming the cursor", () => {
    fc.assert(
      fc.property(uuid, timestamp, fc.string({ maxLength: 600 }), (id, ts, junk) => {
        const cursor = encodeCursor('acme', { id, timestamp_submitted: ts });
        const refusals = [
          outcome(() => decodeCursor(cursor, 'globex', '2025-01-01T00:00:00.000Z')),
          outcome(() => decodeCursor(cursor, 'acme', '2031-01-01T00:00:00.000Z')),
          outcome(() => decodeCursor(junk, 'acme', '2025-01-01T00:00:00.000Z')),
          outcome(() =>
            decodeCursor(Buffer.from(junk).toString('base64url'), 'acme', '2025-01-01T00:00:00.000Z'),
          ),
        ];
        for (const refusal of refusals.slice(0, 2))
          expect(refusal).toMatchObject({ code: 'invalid_request', field: 'cursor' });
        for (const refusal of refusals.slice(2)) {
          if (refusal instanceof RequestError) expect(refusal.field).toBe('cursor');
        }
      }),
      runs,
    );
  });
});
