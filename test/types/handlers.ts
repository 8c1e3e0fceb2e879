// Compile-time checks of the generated handler types (run by `npm run typecheck`; nothing here executes).
// A handler gets typed request parts and must answer one of the documented responses of its operation.
import type { GetModelRequest, GetModelResponse, Handlers, OperationResponse } from '../../generated/operations.ts';

export async function getModel(request: GetModelRequest): Promise<GetModelResponse> {
  const id: string = request.path.id;
  if (id === 'missing') {
    return {
      status: 404,
      contentType: 'application/problem+json',
      body: {
        type: 'https://docs.content-service.example/problems/model_not_found',
        title: 'No such model',
        status: 404,
        code: 'model_not_found',
        request_id: 'req_01JD3Y2M7Q8W9E4R5T6Y7V8X9Z',
        error: { message: 'No model missing.', type: 'invalid_request_error', param: 'model', code: 'model_not_found' },
      },
    };
  }
  return {
    status: 200,
    contentType: 'application/json',
    body: {
      id,
      object: 'model',
      created: 1721260800,
      owned_by: 'openai',
      name: 'GPT-4o mini',
      provider: 'openai',
      available: true,
      context_window: 128000,
      max_output_tokens: 16384,
      capabilities: ['chat'],
      pricing: { input_per_million_usd: 0.15, cached_input_per_million_usd: 0.075, output_per_million_usd: 0.6 },
      regions: ['eu'],
      deprecated: false,
      deprecation_date: null,
    },
  };
}

// @ts-expect-error 201 is not a documented status of getModel.
export const undocumentedStatus: GetModelResponse = { status: 201, contentType: 'application/json', body: {} };

export const wrongBody: OperationResponse<'getModel'> = {
  status: 200,
  contentType: 'application/json',
  // @ts-expect-error the body of a 200 must be a Model, not a problem document.
  body: { code: 'not_found' },
};

export const deleteAnswersNoBody: OperationResponse<'deleteVoice'> = { status: 204 };

// @ts-expect-error a handler map must implement every operation of the contract.
export const incomplete: Handlers<unknown> = { getModel };

// A streamed answer: the events of createChatCompletion are typed by its text/event-stream contentSchema
// (ChatCompletionChunk), plus `text` events for sentinels such as [DONE].
export const streamed: OperationResponse<'createChatCompletion'> = {
  status: 200,
  contentType: 'text/event-stream',
  events: (async function* () {
    yield { text: '[DONE]' };
  })(),
};

export const wrongEvent: OperationResponse<'createChatCompletion'> = {
  status: 200,
  contentType: 'text/event-stream',
  // @ts-expect-error an event's data must be a ChatCompletionChunk.
  events: (async function* () {
    yield { data: { nope: true } };
  })(),
};

export const eventsOnJson: OperationResponse<'getModel'> = {
  status: 200,
  contentType: 'application/json',
  // @ts-expect-error a JSON answer has a body, not events.
  events: (async function* () {})(),
};
