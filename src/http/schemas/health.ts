// Schemas of the probes: liveness and readiness, answered without credentials (src/http/routes/health.ts).
import { Type } from 'typebox';
import { json } from './common.js';
import { problems } from './problems.js';

const TAGS = ['System'];
/** Probes take no credentials, and an Authorization header is not looked at. */
const NO_SECURITY: Array<Record<string, string[]>> = [{}];

const CheckState = Type.Union([
  Type.Literal('up'),
  Type.Literal('down'),
  Type.Literal('timeout'),
  Type.Literal('shutting-down'),
]);

export const livenessSchema = {
  operationId: 'getLiveness',
  summary: 'Liveness: the process serves HTTP',
  description: 'Answers 200 while the process can answer at all; it looks at nothing else. Never logged at info level.',
  tags: TAGS,
  security: NO_SECURITY,
  response: {
    200: json('The process serves.', Type.Object({ status: Type.Literal('live') }, { additionalProperties: false })),
    ...problems(),
  },
};

export const readinessSchema = {
  operationId: 'getReadiness',
  summary: 'Readiness: the instance should be sent requests',
  description:
    'Answers 200 when the database answers with the schema this version expects and the blob store answers, ' +
    'and the instance is not shutting down; otherwise 503 with a problem that has a member per dependency (`database`, `blobStore`, and `instance` while it shuts down) saying what is down. ' +
    'A result is reused for a fraction of a second, so probing every second costs little. Never logged at info level.',
  tags: TAGS,
  security: NO_SECURITY,
  response: {
    200: json(
      'Ready.',
      Type.Object(
        {
          status: Type.Literal('ready'),
          checks: Type.Object({ database: CheckState, blobStore: CheckState }, { additionalProperties: CheckState }),
        },
        { additionalProperties: false },
      ),
    ),
    ...problems(),
  },
};
