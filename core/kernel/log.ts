/**
 * A small leveled logger: one line per record on stderr, `time level message key=value…`.
 * The level can change at run time (the control plane does). Recent records are kept in a ring so
 * the status page and tests can show what was logged without scraping stderr (records below the
 * level are neither written nor kept).
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface LogRecord {
  time: string;
  level: Exclude<LogLevel, 'silent'>;
  message: string;
  fields: Record<string, unknown>;
}

export class Logger {
  private readonly recent: LogRecord[] = [];

  constructor(
    public level: LogLevel = 'info',
    private readonly sink: (line: string) => void = (line) => process.stderr.write(line + '\n'),
    private readonly keep = 500,
  ) {}

  debug(message: string, fields: Record<string, unknown> = {}): void {
    this.write('debug', message, fields);
  }
  info(message: string, fields: Record<string, unknown> = {}): void {
    this.write('info', message, fields);
  }
  warn(message: string, fields: Record<string, unknown> = {}): void {
    this.write('warn', message, fields);
  }
  error(message: string, fields: Record<string, unknown> = {}): void {
    this.write('error', message, fields);
  }

  records(): LogRecord[] {
    return [...this.recent];
  }

  enabled(level: LogLevel): boolean {
    return ORDER[level] >= ORDER[this.level];
  }

  private write(level: LogRecord['level'], message: string, fields: Record<string, unknown>): void {
    if (!this.enabled(level)) return;
    const record: LogRecord = { time: new Date().toISOString(), level, message, fields };
    this.recent.push(record);
    if (this.recent.length > this.keep) this.recent.shift();
    const extra = Object.entries(fields)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${typeof v === 'string' && !/\s/.test(v) ? v : JSON.stringify(v)}`)
      .join(' ');
    this.sink(`${record.time} ${level.padEnd(5)} ${message}${extra ? ' ' + extra : ''}`);
  }
}
