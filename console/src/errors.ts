// What the console says about a failure: the API's message and request id when there is one.
import { DevdataError } from '@devdata/client';

export interface ProblemReport {
  message: string;
  code?: string;
  status?: number;
  requestId?: string;
  details: Array<{ path: string; message: string }>;
}

export function describeProblem(error: unknown): ProblemReport {
  if (error instanceof DevdataError) {
    return {
      message: error.message,
      code: error.code,
      status: error.status || undefined,
      requestId: error.requestId,
      details: error.details.map((detail) => ({ path: detail.path, message: detail.message })),
    };
  }
  return { message: error instanceof Error ? error.message : String(error), details: [] };
}

export function isStatus(error: unknown, status: number): error is DevdataError {
  return error instanceof DevdataError && error.status === status;
}

/** Parses a JSON object typed into a form; throws with a message for the form to show. */
export function parseJsonObject(text: string, field: string): Record<string, unknown> {
  const trimmed = text.trim();
  if (trimmed === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch (error) {
    throw new Error(`${field} is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${field} must be a JSON object ({…})`);
  return value as Record<string, unknown>;
}

/** A comma-separated list typed into a form, trimmed, without empty entries. */
export function parseList(text: string): string[] {
  return text
    .split(/[,\n]/)
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}
