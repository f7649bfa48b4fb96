// Validates recorded responses against the OpenAPI document the app itself serves, so the
// document cannot drift from the behaviour: any status or body it does not describe fails a test.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

export interface RecordedResponse {
  method: string;
  /** The route template as Fastify knows it, e.g. /api/v1/keys/:id; undefined for 404s of no route. */
  route: string | undefined;
  status: number;
  contentType: string | undefined;
  body: string;
}

interface ResponseObject {
  $ref?: string;
  content?: Record<string, unknown>;
}

interface OpenApiDocument {
  paths: Record<string, Record<string, { responses?: Record<string, ResponseObject> }>>;
  components?: { responses?: Record<string, ResponseObject> };
}

const pointer = (...parts: string[]) => parts.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

export function toOpenApiPath(route: string): string {
  return route.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

export class ContractChecker {
  private readonly ajv: Ajv2020;

  constructor(private readonly document: OpenApiDocument) {
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats(this.ajv);
    this.ajv.addSchema(document as object, 'openapi');
  }

  /** Problems with one response, empty when it matches the document. */
  check(response: RecordedResponse): string[] {
    const label = `${response.method} ${response.route ?? '(no route)'} → ${response.status}`;
    if (response.route === undefined || response.method === 'OPTIONS') return [];
    const path = toOpenApiPath(response.route);
    const operation = this.document.paths[path]?.[response.method.toLowerCase()];
    if (!operation) return [`${label}: operation missing from /openapi.json`];
    const responses = operation.responses ?? {};
    const statusKey = [String(response.status), `${String(response.status)[0]}XX`, `${String(response.status)[0]}xx`, 'default'].find(
      (key) => key in responses,
    );
    if (statusKey === undefined) return [`${label}: status not documented`];
    const mediaType = response.contentType?.split(';')[0]?.trim();
    // A HEAD answer has the headers of its GET and no body (the recorded payload is never sent).
    if (response.method === 'HEAD' || response.status === 204 || response.status === 304 || mediaType !== 'application/json') return [];
    // A response shared by many operations is a reference to components.responses.
    const shared = responses[statusKey]?.$ref?.replace('#/components/responses/', '');
    const documented = shared === undefined ? responses[statusKey] : this.document.components?.responses?.[shared];
    const content = documented?.content;
    if (!content || !('application/json' in content)) return [`${label}: JSON body not documented`];
    const at = shared === undefined ? ['paths', path, response.method.toLowerCase(), 'responses', statusKey] : ['components', 'responses', shared];
    const validate = this.ajv.getSchema(`openapi#/${pointer(...at, 'content', 'application/json', 'schema')}`);
    if (!validate) return [`${label}: schema could not be compiled`];
    if (validate(JSON.parse(response.body))) return [];
    return [`${label}: body does not match the schema: ${this.ajv.errorsText(validate.errors)} in ${response.body.slice(0, 300)}`];
  }
}
