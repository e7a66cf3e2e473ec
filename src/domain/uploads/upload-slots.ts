// The uploads streaming in this instance at once (direct uploads, resumable starts and appends): each holds a
// connection, a file descriptor for its bytes and a share of the disk, so past `file.maxConcurrentUploads` a new one
// is refused with 503 and Retry-After before its body is read, instead of letting slow clients pile up.
import { serviceUnavailable } from '../../errors.js';

export class UploadSlots {
  private used = 0;

  constructor(readonly max: number) {}

  /** Takes a slot, or throws 503 when all are taken. The returned function gives it back (once; later calls do nothing). */
  take(): () => void {
    if (this.used >= this.max)
      throw serviceUnavailable(`This instance is receiving the maximum of ${this.max} uploads at once; retry shortly.`);
    this.used++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.used--;
    };
  }

  get inUse(): number {
    return this.used;
  }
}
