/** Vitest globalSetup of the main run: every run starts with no transition-coverage records. */
import { clearRecords } from './transition-coverage.js';

export default function setup(): void {
  clearRecords();
}
