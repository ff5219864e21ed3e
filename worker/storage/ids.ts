/**
 * @module Resource ids (spec 2.0): ULIDs from a monotonic factory. Workers freeze the clock during
 * a request, so plain ULIDs minted together share a timestamp and sort at random; monotonic ones
 * sort in creation order, which keyset pagination and "creation order" listings rely on.
 */
import { monotonicFactory } from "ulid";

export const ulid = monotonicFactory();
