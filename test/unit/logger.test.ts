import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url).pathname;

/** Runs `body` in a child process with `logger` from src/logger.ts; answers what it wrote to stdout. */
function childOutput(body: string): string[] {
  const code = `import { createLogger } from './src/logger.ts'; const logger = createLogger('info'); ${body}`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: root, encoding: 'utf8' });
  return out.split('\n').filter(Boolean);
}

describe('request log lines, written in batches', () => {
  it('every line reaches the output, in order, whether the process exits at once or after a flush', () => {
    for (const ending of ['process.exit(0);', 'logger.flush(() => process.exit(0));', '']) {
      for (const count of [1, 150, 2_000]) {
        const lines = childOutput(`for (let i = 0; i < ${count}; i++) logger.info({ i, text: 'é'.repeat(i % 50) }, 'request'); ${ending}`);
        expect(lines.length, `${count} lines, ending ${ending || 'naturally'}`).toBe(count);
        expect(lines.map((line) => (JSON.parse(line) as { i: number }).i)).toEqual(Array.from({ length: count }, (_, i) => i));
      }
    }
  });
});
