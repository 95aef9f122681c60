// Just what algomatch.ts uses of the mljs packages that ship no type declarations.
declare module 'ml-cart' {
  export class DecisionTreeClassifier {
    constructor(options?: Record<string, unknown>);
    train(X: number[][], y: number[]): void;
    predict(X: number[][]): number[];
  }
  export class DecisionTreeRegression {
    constructor(options?: Record<string, unknown>);
    train(X: number[][], y: number[]): void;
    predict(X: number[][]): number[];
  }
}
declare module 'ml-knn' {
  export default class KNN {
    constructor(X: number[][], y: number[], options?: { k?: number });
    predict(X: number[][]): number[];
  }
}
declare module 'ml-logistic-regression' {
  import type { Matrix } from 'ml-matrix';
  export default class LogisticRegression {
    constructor(options?: { numSteps?: number; learningRate?: number });
    train(X: Matrix, Y: Matrix): void;
    predict(X: Matrix): number[];
  }
}
