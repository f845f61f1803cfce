// PostgreSQL's EXPLAIN (FORMAT JSON) plans, as the plan tests read them.

/** A plan node: the fields the tests look at (ANALYZE's only when it ran). */
export interface PlanNode {
  'Node Type': string;
  'Plan Rows': number;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

/** The node and every node below it, depth first. */
export const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];
