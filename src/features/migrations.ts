// Every feature's migrations, without the features: a process that migrates the database and serves no request (the
// command-line tool) loads these files only, not the whole server that src/features/index.ts is. Each feature's
// index.ts names the same migrations (Feature.migrations), which the server and the worker apply;
// test/server/migration-list.test.ts holds this list to theirs.

import type { MigrationsOfFeature } from '../storage/database.ts';
import { keyUsers } from '../storage/migrations/003_key_users.ts';
import { membersScimSource } from '../storage/migrations/024_members_scim_source.ts';
import { chatThreads } from './chat/migrations/008_chat_threads.ts';
import { chatTools } from './chat/migrations/017_chat_tools.ts';
import { responses } from './chat/migrations/018_responses.ts';
import { chatbots } from './chatbots/migrations/013_chatbots.ts';
import { directories } from './directory/migrations/025_directories.ts';
import { documents } from './documents/migrations/011_documents.ts';
import { usage } from './engine/migrations/007_usage.ts';
import { usageRecordsProject } from './engine/migrations/026_usage_records_project.ts';
import { knowledge } from './knowledge/migrations/012_knowledge.ts';
import { knowledgeVectors } from './knowledge/migrations/014_knowledge_vectors.ts';
import { spendLimits } from './limits/migrations/021_spend_limits.ts';
import { complianceRules } from './policy/migrations/010_compliance_rules.ts';
import { projects } from './projects/migrations/004_projects.ts';
import { projectFallbackModels } from './projects/migrations/022_project_fallback_models.ts';
import { voices } from './voices/migrations/009_voices.ts';
import { webhooks } from './webhooks/migrations/002_webhooks.ts';
import { eventCatalogue } from './webhooks/migrations/006_event_catalogue.ts';
import { workflows } from './workflows/migrations/015_workflows.ts';

export const featureMigrations: readonly MigrationsOfFeature[] = [
  { name: 'workspace', migrations: { '003_key_users': keyUsers, '024_members_scim_source': membersScimSource } },
  { name: 'directory', migrations: { '025_directories': directories } },
  { name: 'webhooks', migrations: { '002_webhooks': webhooks, '006_event_catalogue': eventCatalogue } },
  { name: 'projects', migrations: { '004_projects': projects, '022_project_fallback_models': projectFallbackModels } },
  { name: 'engine', migrations: { '007_usage': usage, '026_usage_records_project': usageRecordsProject } },
  { name: 'limits', migrations: { '021_spend_limits': spendLimits } },
  {
    name: 'chat',
    migrations: { '008_chat_threads': chatThreads, '017_chat_tools': chatTools, '018_responses': responses },
  },
  { name: 'voices', migrations: { '009_voices': voices } },
  { name: 'policy', migrations: { '010_compliance_rules': complianceRules } },
  { name: 'knowledge', migrations: { '012_knowledge': knowledge, '014_knowledge_vectors': knowledgeVectors } },
  { name: 'documents', migrations: { '011_documents': documents } },
  { name: 'chatbots', migrations: { '013_chatbots': chatbots } },
  { name: 'workflows', migrations: { '015_workflows': workflows } },
];
