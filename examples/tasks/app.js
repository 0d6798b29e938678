// A small task tracker on svc: a hook that normalizes new tasks, a route that closes a task for
// its owner, a superuser summary route, a job that marks overdue tasks every minute and, behind
// the `overdue-mail` flag, mails their owners; one data migration in ./migrations.
//
//   npx svc superuser create --email=admin@example.com --password=change-me-please
//   npx svc serve --app=examples/tasks/app.js
import { defineApp, ApiError } from 'svc';

export default defineApp({
  // created on the first start, kept in step with this declaration afterwards
  collections: [
    { name: 'users', type: 'auth', fields: [{ name: 'name', type: 'text' }], createRule: '@public', viewRule: 'id = @request.auth.id', updateRule: 'id = @request.auth.id' },
    {
      name: 'tasks', type: 'base',
      fields: [
        { name: 'title', type: 'text' },
        { name: 'status', type: 'text' },
        { name: 'owner', type: 'relation', options: { collection: 'users', maxSelect: 1 } },
        { name: 'due', type: 'date' },
      ],
      listRule: 'owner = @request.auth.id', viewRule: 'owner = @request.auth.id',
      createRule: '@request.auth.id != ""', updateRule: 'owner = @request.auth.id', deleteRule: null,
    },
  ],
  // applied in file-name order before the server serves (and by `svc migrate`)
  migrations: new URL('./migrations', import.meta.url),
  // turn on with: PUT /api/settings/flag:overdue-mail {"value":"true"} (superuser)
  flags: [{ name: 'overdue-mail', default: false, description: 'mail owners when a task becomes overdue' }],
  // queued mail; delivered through SERVICE_SMTP_* (or written to the log when unset)
  mail: {},
  hooks: {
    records: {
      tasks: {
        // every new task starts open, owned by its creator, with a trimmed title
        beforeCreate: async ({ record, auth }) => {
          const title = typeof record.title === 'string' ? record.title.trim() : '';
          if (!title) throw new ApiError(400, 'validation_failed', 'A task needs a title.', { title: { code: 'validation_required', message: 'Missing required value.' } });
          record.title = title;
          record.status = 'open';
          if (auth) record.owner = auth.id;
        },
        afterCreate: async ({ record, app }) => app.log.info(`task ${record.id} created: ${record.title}`),
      },
    },
  },
  routes: [
    {
      // closes one of the caller's own tasks (the collection's update rule applies: asUser)
      method: 'POST', path: '/api/tasks/:id/close', auth: 'authed',
      handler: async ({ params, auth, app }) => {
        const task = await app.records('tasks').asUser(auth).update(params.id, { status: 'done' });
        return { id: task.id, status: task.status };
      },
    },
    {
      method: 'GET', path: '/api/tasks/summary', auth: 'superuser',
      handler: async ({ app }) => {
        const count = async (status) => (await app.records('tasks').list({ filter: `status = "${status}"`, perPage: 1 })).totalItems;
        return { open: await count('open'), overdue: await count('overdue'), done: await count('done') };
      },
    },
  ],
  jobs: [
    {
      name: 'mark-overdue', schedule: '* * * * *',
      handler: async ({ app }) => {
        const now = new Date().toISOString().replace('T', ' ');
        const late = await app.records('tasks').list({ filter: `status = "open" && due != "" && due < "${now}"`, perPage: 100 });
        for (const t of late.items) {
          await app.records('tasks').update(t.id, { status: 'overdue' });
          if (!app.flags.enabled('overdue-mail') || !t.owner) continue;
          const owner = await app.records('users').get(t.owner);
          await app.mail.enqueue({
            to: owner.email,
            subject: `Overdue: ${t.title}`,
            text: app.mail.render('Hi {{ name }}, "{{ title }}" is past its due date.', { name: owner.name || owner.email, title: t.title }, { html: false }),
            html: app.mail.render('<p>Hi {{ name }}, <b>{{ title }}</b> is past its due date.</p>', { name: owner.name || owner.email, title: t.title }),
          });
        }
        if (late.items.length) app.log.info(`marked ${late.items.length} task(s) overdue`);
      },
    },
  ],
});
