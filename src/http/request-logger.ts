// Fastify gives every request a child of the service's logger, bound to the request id. pino makes a child by
// redacting and serialising its bindings at once (REDACT applies to bindings too), visible in CPU profiles of
// GET /<id>, while nearly every request writes nothing at the service's level. The request's logger here makes the child only when
// a line is written at an enabled level, so what is written is the same.
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino';

type Args = Parameters<FastifyBaseLogger['info']>;

class RequestLogger {
  private made: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
  ) {}

  /** The child pino would have made for the request, made once. */
  private real(): Logger {
    this.made ??= this.parent.child(this.bindings);
    return this.made;
  }

  private write(level: Level, args: Args): void {
    if ((this.made ?? this.parent).isLevelEnabled(level)) (this.real()[level] as (...a: Args) => void)(...args);
  }

  fatal(...args: Args) {
    this.write('fatal', args);
  }
  error(...args: Args) {
    this.write('error', args);
  }
  warn(...args: Args) {
    this.write('warn', args);
  }
  info(...args: Args) {
    this.write('info', args);
  }
  debug(...args: Args) {
    this.write('debug', args);
  }
  trace(...args: Args) {
    this.write('trace', args);
  }
  silent(): void {}

  get level(): string {
    return (this.made ?? this.parent).level;
  }

  set level(level: string) {
    this.real().level = level;
  }

  isLevelEnabled(level: string): boolean {
    return (this.made ?? this.parent).isLevelEnabled(level);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.real().child(bindings, options);
  }
}

/**
 * Fastify's `childLoggerFactory`: the lazy logger above, unless the route asks for options of its own (a log level
 * or serializers), which pino applies when it makes the child.
 */
export function requestLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  if (Object.keys(options).length > 0 || typeof (logger as Partial<Logger>).isLevelEnabled !== 'function')
    return logger.child(bindings, options);
  // The service's logger is pino (server.ts), whose isLevelEnabled the lazy logger needs.
  return new RequestLogger(logger as Logger, bindings) as unknown as FastifyBaseLogger;
}
