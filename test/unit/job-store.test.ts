import { describeJobStore } from '#test/helpers/job-store-contract';
import { InMemoryJobStore } from '#test/helpers/memory-ports';

const store = new InMemoryJobStore();
describeJobStore('in-memory', () => store);
