/**
 * The TypeBox schemas of the API, one source for request validation, handler types, answer
 * serialisation and the OpenAPI document: requests (requests.ts), the metadata filter grammar
 * (filter.ts), success answers (answers.ts) and the RFC 9457 problem body (problem.ts).
 */
export * from './requests.ts';
export * from './answers.ts';
export { FILTER_REF, FilterGrammar } from './filter.ts';
