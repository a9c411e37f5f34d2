import { ISession } from './model';

/**
 * What the panel and session views ask the application to do; implemented in
 * index.ts with JupyterLab commands and services.
 */
export interface IAgentActions {
  openSession(id: string): void;
  openConsole(session: ISession): Promise<void>;
  exportNotebook(session: ISession): Promise<void>;
  cancel(session: ISession): Promise<void>;
  interrupt(session: ISession): Promise<void>;
  refine(session: ISession): Promise<void>;
}
