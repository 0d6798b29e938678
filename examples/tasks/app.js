// A small task tracker on svc: a hook that normalizes new tasks, a route that closes a task for
// its owner, a superuser summary route, and a job that marks overdue tasks every minute.
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
        for (const t of late.items) await app.records('tasks').update(t.id, { status: 'overdue' });
        if (late.items.length) app.log.info(`marked ${late.items.length} task(s) overdue`);
      },
    },
  ],
});
