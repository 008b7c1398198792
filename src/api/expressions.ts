/** Column expressions and scalar UDFs, as users name them; defined with the plan (`plan/expressions.ts`). */

export {
  type ArrowType,
  type ArrowTypeName,
  type ArrowUdfCall,
  type ArrowUdfOptions,
  arrowUdf,
} from '../plan/arrow-udf.js';
export {
  type ColumnExpr,
  lit,
  type ScalarUdf,
  udf,
  type WindowTimeExpr,
  windowTime,
} from '../plan/expressions.js';
