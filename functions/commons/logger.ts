import { Logger } from '@aws-lambda-powertools/logger';
import { ENV } from './contract.ts';

/**
 * Structured JSON logs. Events are never logged whole: their query strings carry API keys.
 * Level from POWERTOOLS_LOG_LEVEL (INFO by default).
 */
export const logger = new Logger({ serviceName: process.env[ENV.serviceName] ?? 'transcription' });
