import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context } from 'aws-lambda';
import { IDEMPOTENCY_SECONDS, RESOURCES } from '#commons/contract';
import { RequestError } from '#core/errors';
import { IDEMPOTENCY_HEADER } from '#core/idempotency';
import type { IdempotentRequests } from '#core/ports';

/**
 * How long a request may hold its key before a repeat may take it over, should its function die:
 * longer than API Gateway lets a request run (29 s).
 */
const IN_PROGRESS_MS = 30_000;

export interface WaitSettings {
  /** How long a repeat waits for the first request of its key to finish before answering `conflict`. */
  waitMs: number;
  /** How often it looks meanwhile. */
  pollMs: number;
}

const DEFAULT_WAIT: WaitSettings = { waitMs: 10_000, pollMs: 200 };

type Request = { tenantId: string; key: string; fingerprint: string };
type Work = () => Promise<object>;

/**
 * `Idempotency-Key` requests through Powertools' idempotency utility: one record per tenant and key
 * (a SHA-256 of both), holding the fingerprint of the request and what it answered, for 24 hours. The
 * record is taken (conditionally, so concurrent repeats find it taken) when the work starts, and
 * removed if the work throws.
 */
export class PowertoolsIdempotentRequests implements IdempotentRequests {
  private readonly runners = new Map<string, (request: Request, work: Work) => Promise<object>>();

  /** `persistence` makes one store per scope: a store keeps its key prefix between calls. */
  constructor(
    private readonly persistence: () => BasePersistenceLayer,
    private readonly wait: WaitSettings = DEFAULT_WAIT,
  ) {}

  /** Over the idempotency table (DynamoDB on AWS, DynamoDB Local in the local runtime). */
  static inTable(
    client: DynamoDBClient,
    tableName: string,
    wait?: WaitSettings,
  ): PowertoolsIdempotentRequests {
    const persistence = () =>
      new DynamoDBPersistenceLayer({
        tableName,
        awsSdkV3Client: client,
        keyAttr: RESOURCES.idempotencyTable.partitionKey,
        expiryAttr: RESOURCES.idempotencyTable.ttlAttribute,
      });
    return new PowertoolsIdempotentRequests(persistence, wait);
  }

  async once<Result extends object>(input: {
    scope: string;
    tenantId: string;
    key: string;
    fingerprint: string;
    work: () => Promise<Result>;
  }): Promise<{ result: Result; replayed: boolean }> {
    const run = this.runner(input.scope);
    const request = { tenantId: input.tenantId, key: input.key, fingerprint: input.fingerprint };
    let ran = false;
    const work = async () => {
      ran = true;
      return input.work();
    };
    const deadline = Date.now() + this.wait.waitMs;
    for (;;) {
      try {
        const result = (await run(request, work)) as Result;
        return { result, replayed: !ran };
      } catch (error) {
        if (error instanceof IdempotencyValidationError) {
          throw new RequestError(
            'conflict',
            `This ${IDEMPOTENCY_HEADER} was used for a different request in the last 24 hours; use a new key for a new request.`,
            IDEMPOTENCY_HEADER,
          );
        }
        if (!(error instanceof IdempotencyAlreadyInProgressError)) throw error;
        if (Date.now() >= deadline) {
          throw new RequestError(
            'conflict',
            `A request with this ${IDEMPOTENCY_HEADER} is still being processed; repeat it in a moment.`,
            IDEMPOTENCY_HEADER,
            1,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, this.wait.pollMs));
      }
    }
  }

  private runner(scope: string): (request: Request, work: Work) => Promise<object> {
    let runner = this.runners.get(scope);
    if (!runner) {
      const config = new IdempotencyConfig({
        eventKeyJmesPath: '[tenantId, key]',
        payloadValidationJmesPath: 'fingerprint',
        throwOnNoIdempotencyKey: true,
        expiresAfterSeconds: IDEMPOTENCY_SECONDS,
        hashFunction: 'sha256',
        // Not a Lambda handler: the in-progress lock's lifetime is given as the time left.
        lambdaContext: { getRemainingTimeInMillis: () => IN_PROGRESS_MS } as Context,
      });
      runner = makeIdempotent(async (_request: Request, work: Work) => work(), {
        persistenceStore: this.persistence(),
        config,
        keyPrefix: scope,
      });
      this.runners.set(scope, runner);
    }
    return runner;
  }
}
