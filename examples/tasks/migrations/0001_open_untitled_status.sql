-- Tasks written before the hook existed may have no status: they are open.
UPDATE "tasks" SET "status" = 'open' WHERE "status" IS NULL OR "status" = '';
