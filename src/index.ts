/**
 * The package root (`import { defineApp, ApiError } from 'svc'`): the embeddable framework
 * (docs/framework.md).
 */
export { defineApp, isApp, type App, type StartOptions, type RunningApp } from './app/app.js';
export { AppDefinitionError, type AppDefinition, type AuthEventTag, type AuthHook, type AuthHookEvent, type AuthHooks, type AuthMethodContext, type AuthMethodTag, type AuthRecord, type CollectionDefinition, type CustomAuthMethod, type FeatureOptions, type MailGroup, type JobContext, type JobDefinition, type PaginationOptions, type RecordHook, type RecordHookEvent, type RecordHooks, type RouteContext, type RouteDefinition, type RouteMethod, type TenancyContext } from './app/definition.js';
export type { AppHandle, BatchOp, RecordsHandle } from './app/runtime.js';
export { ApiError } from './errors/api-error.js';
export { MailError, captureMailer, type MailErrorCode, type MailMessage, type Mailer } from './mail/mail-service.js';
export { renderTemplate, TemplateError, type RenderOptions, type MailTemplate } from './mail/templates.js';
export { sesMailer, postmarkMailer } from './mail/providers.js';
export type { MigrationDefinition, MigrationTx, MigrationsOption } from './app/migrations.js';
