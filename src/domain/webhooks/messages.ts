// What a webhook sends: Standard Webhooks' envelope around the change feed's own event data, and the headers that
// sign it. The webhook-id names one event for one webhook, so a retry or a redelivery carries the same one.
import type { ElementId } from '../../values.js';
import { type Cursor, formatCursor } from '../events/cursor.js';
import { messageOf } from '../events/delivery.js';
import type { StoredEvent } from '../events/ports.js';
import { signatureHeader } from './secrets.js';

export interface Message {
  id: string;
  type: string;
  payload: string;
}

const envelope = (type: string, at: Date, dataJson: string) =>
  `{"type":${JSON.stringify(type)},"timestamp":${JSON.stringify(at.toISOString())},"data":${dataJson}}`;

/** An element event as GET /events sends its data, under `element.<change>`. */
export function eventMessage(event: StoredEvent): Message {
  const type = `element.${event.change}`;
  return { id: `msg_${formatCursor(event.cursor)}`, type, payload: envelope(type, event.at, messageOf(event).data) };
}

/** Events the webhook was to have were pruned while it was disabled: it goes on from `cursor`. */
export function resetMessage(webhookId: ElementId, cursor: Cursor, at: Date): Message {
  const id = `msg_reset_${formatCursor(cursor)}`;
  const data = JSON.stringify({ webhook: webhookId, cursor: formatCursor(cursor) });
  return { id, type: 'webhook.reset', payload: envelope('webhook.reset', at, data) };
}

export function pingMessage(webhookId: ElementId, pingId: string, at: Date): Message {
  const data = JSON.stringify({ webhook: webhookId });
  return { id: `msg_ping_${pingId}`, type: 'webhook.ping', payload: envelope('webhook.ping', at, data) };
}

/** The request headers of one attempt, signed with every secret that signs now. */
export function signedHeaders(message: Message, secrets: string[], at: Date): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': message.id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatureHeader(secrets, message.id, at, message.payload),
  };
}
