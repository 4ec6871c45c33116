/**
 * paperclip.log: the server's own output, as text. Paperclip's logger prints through pino-pretty
 * with `colorize: true` set in its code (middleware/logger.js), which colours whatever NO_COLOR
 * and FORCE_COLOR say, so the colour codes are taken out here, on the way to the file. A code
 * cut between two chunks of output is held back until the rest arrives.
 */

/** An ANSI escape sequence: CSI (`ESC [ … final byte`) or a two-byte ESC sequence. */
const ESCAPE = /\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])/g;
/** An escape sequence not finished by the end of a chunk. */
const UNFINISHED = /\x1b(?:\[[0-?]*[ -/]*)?$/;

export class PlainText {
  private carry = '';

  /** The chunk's text without escape sequences (an unfinished one at its end waits for the next). */
  write(chunk: string): string {
    let text = this.carry + chunk;
    this.carry = '';
    const cut = UNFINISHED.exec(text);
    if (cut) {
      this.carry = text.slice(cut.index);
      text = text.slice(0, cut.index);
    }
    return text.replace(ESCAPE, '');
  }

  /** Whatever was held back (an escape sequence the output never finished), dropped. */
  end(): string {
    const rest = this.carry.replace(/\x1b/g, '');
    this.carry = '';
    return rest;
  }
}
