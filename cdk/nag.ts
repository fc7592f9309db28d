import { Validations } from 'aws-cdk-lib';
import type { CfnBucket } from 'aws-cdk-lib/aws-s3';
import { API_ROUTES, MEDIA_PREFIXES, transcribeJobPrefix } from '#commons/contract';
import type { TranscriptionStack } from './stack.ts';

const PACK = 'AwsSolutions::AwsSolutions';

/**
 * The cdk-nag AwsSolutions findings this design accepts, each with its reason. Findings are named
 * exactly (rule and resource), so that a new wildcard or managed policy still fails the check.
 */
export function acknowledgeNagFindings(stack: TranscriptionStack): void {
  const validations = Validations.of(stack);
  const acknowledge = (id: string, reason: string) =>
    validations.acknowledge({ id: `${PACK}-${id}`, reason });

  acknowledge(
    'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
    'Grants only CloudWatch Logs writes, which every function needs for its own log group.',
  );
  acknowledge(
    'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
    "API Gateway's account-level role for writing the access logs; AWS maintains it for exactly this use.",
  );
  const bucket = stack.getLogicalId(stack.data.mediaBucket.node.defaultChild as CfnBucket);
  for (const prefix of Object.values(MEDIA_PREFIXES)) {
    acknowledge(
      `IAM5[Resource::<${bucket}.Arn>/${prefix}*]`,
      `Object keys under ${prefix} are per job ids made at run time; the grant names explicit actions on that prefix only.`,
    );
  }
  acknowledge(
    `IAM5[Resource::arn:<AWS::Partition>:transcribe:<AWS::Region>:<AWS::AccountId>:transcription-job/${transcribeJobPrefix(stack.stackName)}*]`,
    "Transcription job names are made per job at run time; the grant is limited to this stack's name prefix.",
  );
  // Only on the worker's policy, where the one "*" statement is StartTranscriptionJob: another "*"
  // anywhere else still fails the check.
  const workerPolicy = stack.worker.worker.role?.node.tryFindChild('DefaultPolicy');
  if (workerPolicy) {
    const workerValidations = Validations.of(workerPolicy);
    workerValidations.acknowledge({
      id: `${PACK}-IAM5[Resource::*]`,
      reason:
        'transcribe:StartTranscriptionJob has no resource type (Service Authorization Reference), so it must name "*"; a transcribe:OutputBucketName condition pins it to the media bucket.',
    });
    const { bedrockModelId } = stack.settings;
    const foundationModel = bedrockModelId?.split('.').slice(1).join('.');
    if (foundationModel) {
      workerValidations.acknowledge({
        id: `${PACK}-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/${foundationModel}]`,
        reason:
          'An inference profile routes to its foundation model in every region of the profile; the grant holds only for requests through this profile (bedrock:InferenceProfileArn).',
      });
    }
  }
  acknowledge(
    'L1',
    'Node.js 22 is the runtime the service is built and tested on (DESIGN 7); upgrades are deliberate.',
  );
  acknowledge(
    'APIG2',
    'Bodies are multipart audio uploads that gateway models cannot describe; the handlers validate every part and answer field-named 400s.',
  );
  acknowledge(
    'APIG3',
    'WAF is an operator choice with its own cost; stage throttling and the API key authorizer guard the API. Attach a web ACL to the stage when needed.',
  );
  acknowledge(
    'APIG6',
    'Execution logs would record request parameters, API keys among them (they travel in the query string); access logs are on with a format that leaves the query string out.',
  );
  // Only the console page is open, and it is static HTML: its data routes are behind the authorizer.
  for (const route of API_ROUTES.filter((candidate) => !candidate.authorized)) {
    const method = stack.api.restApi.root.resourceForPath(route.path).node.findChild(route.method);
    Validations.of(method).acknowledge({
      id: `${PACK}-APIG4`,
      reason: `${route.path} serves a page without data; the routes it reads from require an API key.`,
    });
  }
  acknowledge(
    'COG4',
    'Clients authenticate with API keys (SPEC 5) checked by the Lambda request authorizer, not with Cognito user pools.',
  );
}
