import { type OutboundPolicy, OutboundRefused, OutboundTimeout, sendOnce } from '#commons/outbound-http';
import type { WebhookResponse, WebhookSender } from '#core/ports';

/**
 * POSTs webhooks through the service's one guard for client-given addresses (`outbound-http.ts`,
 * the same as `audio_url` fetches): https only outside local mode, public addresses only, checked
 * after DNS resolution; no redirect followed; an answer must begin within the policy's time. An
 * answer is its status line: the body is not read.
 */
export class HttpWebhookSender implements WebhookSender {
  private readonly policy: OutboundPolicy;

  constructor(local: boolean, timeoutMs: number, policy: Partial<OutboundPolicy> = {}) {
    this.policy = {
      local,
      maxRedirects: 0,
      headersTimeoutMs: timeoutMs,
      idleTimeoutMs: timeoutMs,
      ...policy,
    };
  }

  async post(url: string, body: string, headers: Record<string, string>): Promise<WebhookResponse> {
    try {
      const response = await sendOnce(
        url,
        { method: 'POST', headers: { ...headers, 'user-agent': 'transcription-webhooks/1.1' }, body },
        this.policy,
      );
      // Nothing of the body is wanted; the connection is not kept.
      response.body.destroy();
      return { outcome: 'answered', statusCode: response.status };
    } catch (error) {
      if (error instanceof OutboundRefused) return { outcome: 'refused', reason: error.message };
      if (error instanceof OutboundTimeout) return { outcome: 'timeout' };
      return { outcome: 'unreachable', reason: errorCode(error) };
    }
  }
}

function errorCode(error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return typeof code === 'string' ? code : String(message ?? error);
}
