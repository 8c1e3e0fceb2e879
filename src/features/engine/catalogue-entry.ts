// One model of the catalogue, as the catalogue file holds it: the type that the pipeline, the providers and the
// catalogue share, in a file of its own so that none of them imports another for it.
import type { components } from '../../../generated/openapi.ts';

/** The API's Model without `object` and `available`, plus the id the provider knows it by. */
export type CatalogueEntry = Omit<components['schemas']['Model'], 'object' | 'available'> & { upstream_id: string };
