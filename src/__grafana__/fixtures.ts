import { existsSync, readFileSync } from 'fs';
import { join } from 'path';

import { AnswerName, Fixture } from './answers';

/** Where test/frames wrote the answers: $HSI_FRAMES_DIR, else .testbed/frames in the clone. */
export function framesDir(): string {
  return process.env.HSI_FRAMES_DIR || join(__dirname, '..', '..', '.testbed', 'frames');
}

/** Reads one answer; a missing file fails the suite: it never passes on no data. */
export function readFixture(name: AnswerName): Fixture {
  const file = join(framesDir(), `${name}.json`);
  if (!existsSync(file)) {
    throw new Error(
      `${file} is missing: these tests read the frames the plugin returned from the test bed. ` +
        'Write them with `go test -count=1 -tags integration ./test/frames/` against a running bed ' +
        '(scripts/test.sh does), or point HSI_FRAMES_DIR at them.'
    );
  }
  return JSON.parse(readFileSync(file, 'utf8'));
}
