"""The bed's S3 server's first requests, run with moto's own venv (its boto3) while the server still
takes requests unauthenticated ($INITIAL_NO_AUTH_ACTION_COUNT of them, ACTIONS): an IAM user allowed
every S3 action, its access key, and the buckets named on the command line. Prints the key as JSON;
every later request is checked, so wrong credentials are refused as a real store refuses them.

    python bootstrap.py http://127.0.0.1:PORT BUCKET...
"""

import json
import sys

import boto3

# create_user, put_user_policy, create_access_key, then one create_bucket per bucket.
ACTIONS = 3
REGION = "us-east-1"
ANY_S3 = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}


def main(endpoint: str, buckets: list[str]) -> None:
    unsigned = {"aws_access_key_id": "bootstrap", "aws_secret_access_key": "bootstrap", "region_name": REGION}
    iam = boto3.client("iam", endpoint_url=endpoint, **unsigned)
    iam.create_user(UserName="modelgate-bed")
    iam.put_user_policy(UserName="modelgate-bed", PolicyName="s3", PolicyDocument=json.dumps(ANY_S3))
    key = iam.create_access_key(UserName="modelgate-bed")["AccessKey"]
    s3 = boto3.client("s3", endpoint_url=endpoint, **unsigned)
    for bucket in buckets:
        s3.create_bucket(Bucket=bucket)
    json.dump({"accessKeyId": key["AccessKeyId"], "secretAccessKey": key["SecretAccessKey"]}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
