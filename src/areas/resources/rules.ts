// What a resource may be, and what an update makes of one: the rules every write of a resource is
// decided by (docs/decisions.md: "Resources"), apart from how it is written.
import { badRequest, DomainError, invalidField, type ErrorDetail } from '../../domain-errors.js';
import { ATTRIBUTES_MAX_BYTES, NAME_MAX, STATE_TEXT_MAX, type Resource, type ResourceState, type ResourceType } from './schemas.js';

export interface CreateResourceInput {
  name: string;
  type: ResourceType;
  state: ResourceState;
  attributes?: Record<string, unknown>;
  tags?: string[];
}

export interface UpdateResourceInput {
  name?: string;
  state?: ResourceState;
  attributes?: Record<string, unknown>;
  tags?: string[];
  type?: unknown;
}

/** A version precondition from If-Match: the versions it accepts, `*` (any), or none given. */
export type VersionPrecondition = number[] | '*' | undefined;

/** An update of one resource, as asked. */
export interface ResourceUpdate {
  id: string;
  input: UpdateResourceInput;
  precondition: VersionPrecondition;
}

/** What a state of each type may be; undefined when allowed, else the reason. */
export function stateProblem(type: ResourceType, state: unknown): string | undefined {
  const isText = typeof state === 'string';
  switch (type) {
    case 'sensor':
      if (typeof state === 'number') return Number.isFinite(state) ? undefined : 'must be a finite number';
      if (isText) return state.length <= STATE_TEXT_MAX ? undefined : `must be at most ${STATE_TEXT_MAX} characters`;
      return 'must be a number or a string for a sensor';
    case 'binary_sensor':
    case 'switch':
      return typeof state === 'boolean' ? undefined : `must be true or false for a ${type}`;
    case 'text':
      if (!isText) return 'must be a string for a text resource';
      return state.length <= STATE_TEXT_MAX ? undefined : `must be at most ${STATE_TEXT_MAX} characters`;
  }
}

/** Checks the fields a write sends; returns the trimmed name, if one was sent. */
export function validateFields(
  input: { name?: string; attributes?: Record<string, unknown>; tags?: string[] },
  type: ResourceType,
  state: unknown,
): string | undefined {
  const details: ErrorDetail[] = [];
  let name: string | undefined;
  if (input.name !== undefined) {
    name = input.name.trim();
    if (name.length === 0 || name.length > NAME_MAX) details.push({ path: '/name', message: `must be 1-${NAME_MAX} characters after trimming` });
  }
  if (state !== undefined) {
    const problem = stateProblem(type, state);
    if (problem) details.push({ path: '/state', message: problem });
  }
  if (input.attributes !== undefined && Buffer.byteLength(JSON.stringify(input.attributes)) > ATTRIBUTES_MAX_BYTES) {
    details.push({ path: '/attributes', message: `must be at most ${ATTRIBUTES_MAX_BYTES} bytes as JSON` });
  }
  if (details.length > 0) throw new DomainError('invalid_request', details.map((d) => `${d.path.slice(1)} ${d.message}`).join('; '), details);
  return name;
}

/** Refuses an update that changes nothing it may change: `type` is fixed, and one of the others must be sent. */
export function checkUpdateInput(input: UpdateResourceInput): void {
  if (input.type !== undefined) throw invalidField('/type', 'cannot be changed; create a new resource instead');
  if (input.name === undefined && input.state === undefined && input.attributes === undefined && input.tags === undefined) {
    throw badRequest('Send at least one of name, state, attributes, tags');
  }
}

export function checkPrecondition(current: Resource, precondition: VersionPrecondition): void {
  if (precondition === undefined || precondition === '*' || precondition.includes(current.version)) return;
  throw new DomainError('precondition_failed', `The resource is at version ${current.version}`, [
    { path: '/version', message: `current version is ${current.version}`, currentVersion: current.version },
  ]);
}

/** The resource after the update, and the fields whose values changed; throws when the precondition or the values refuse it. */
export function updated(current: Resource, { input, precondition }: ResourceUpdate, now: string): { resource: Resource; changed: string[] } {
  checkPrecondition(current, precondition);
  const name = validateFields(input, current.type, input.state);
  const resource: Resource = {
    ...current,
    name: name ?? current.name,
    state: input.state ?? current.state,
    attributes: input.attributes ?? current.attributes,
    tags: input.tags ?? current.tags,
    version: current.version + 1,
    updatedAt: now,
  };
  const changed = (['name', 'state', 'attributes', 'tags'] as const).filter((field) => JSON.stringify(resource[field]) !== JSON.stringify(current[field]));
  return { resource, changed };
}
