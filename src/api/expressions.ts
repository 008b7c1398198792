/** Column expressions and scalar UDFs, as users name them; defined with the plan (`plan/expressions.ts`). */
export { type ColumnExpr, lit, type ScalarUdf, udf } from '../plan/expressions.js';
