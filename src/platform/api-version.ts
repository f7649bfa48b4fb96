// The API's name and version: in its info block, the OpenAPI document, downloads and the webhook
// User-Agent. Raised with the specification's version.
export const API_NAME = 'Developer Data Service API';
export const API_VERSION = '1.3.0';
