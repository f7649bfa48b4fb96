// What the resource read model answers with: an account's resources held in memory (a view), or
// what is read of an account so far while storage answers.
import type { ResourceQuery, ResourceRecord } from './store.js';

/** An account's resources as of one of its events. */
export interface ResourceView {
  /** The account's event this view stands at: it reflects every change up to it. */
  readonly lastEventId: number;
  get(id: string): ResourceRecord | undefined;
  /** A page in creation order (`json` of each) and how many match in all. */
  list(query: ResourceQuery): { data: Buffer[]; total: number };
}

/**
 * An account being read into memory. Until a change of its resources is announced, what is read
 * so far is its first resources in creation order as they are, so it answers what lies wholly
 * within it; positions in the whole account hold until a deletion is announced.
 */
export interface ReadingResources {
  /** The resource, if read already and nothing changed since the reading began. */
  get(id: string): ResourceRecord | undefined;
  /** A page of the whole account or of one filter, if it lies wholly within what is read and nothing changed. */
  pageWithin(query: ResourceQuery): Buffer[] | undefined;
  /** The `created_seq` of the whole account's resource at `offset`, so that a page read from storage starts there instead of walking `offset` index entries. */
  creationSeqAt(offset: number): number | undefined;
  /** How many resources the query's filters match, if known and nothing changed: the whole account's from its creation order, a filter's once counted. */
  total(query: ResourceQuery): number | undefined;
  /** A count storage gave for the query's filters, kept until something changes. */
  counted(query: ResourceQuery, total: number): void;
}
