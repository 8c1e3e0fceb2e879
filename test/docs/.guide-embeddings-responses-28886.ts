import { createOpenAI } from '@ai-sdk/openai';
import { generateText } from 'ai';

const openai = createOpenAI({ baseURL: 'http://127.0.0.1:41107/v1', apiKey: process.env.CONTENT_SERVICE_KEY });
const { text } = await generateText({ model: openai('sandbox-echo'), prompt: 'Hello from the AI SDK' });
console.log(text);
